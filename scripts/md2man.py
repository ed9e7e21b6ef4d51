#!/usr/bin/env python3
"""Turn a markdown man page (docs/trove.1.md) into roff (man macros).

    md2man.py docs/trove.1.md trove.1 [VERSION [DOCDIR]]

The source is written as a man page: a "# trove(1)" title line, then "##"
sections NAME, SYNOPSIS, DESCRIPTION, ... SEE ALSO, which become .SH
sections (deeper headings .SS). A source without a "## NAME" section (any
other markdown page) gets a generic NAME, its first heading becomes
DESCRIPTION, and a SEE ALSO is added. "@DOCDIR@" is replaced by DOCDIR,
where the reference pages are installed (default /usr/local/share/doc/trove).

Only simple markdown is handled: ATX headings, paragraphs, fenced code,
bullet and numbered lists, pipe tables, inline code, bold, italics and
links. Tables are set as indented "term: text" paragraphs (.TP), which read
better in a terminal than tbl boxes. Standard library only, so a build
needs nothing beyond python3.
"""
import datetime
import os
import re
import sys


def esc(text):
    """Escape roff specials in running text; non-ASCII characters become
    \\[uXXXX] so that plain troff (without preconv) reads them."""
    text = text.replace("\\", "\\e")
    text = text.replace("-", "\\-")
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def line_guard(line):
    return "\\&" + line if line.startswith((".", "'")) else line


def inline(text):
    """Markdown inline markup to roff font changes."""
    out = []
    pos = 0
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)]+)\)|(?<![\w*])\*([^*\s][^*]*)\*")
    for m in pattern.finditer(text):
        out.append(esc(text[pos:m.start()]))
        code, bold, ltext, _url, ital = m.groups()
        if code is not None:
            out.append("\\fB" + esc(code) + "\\fR")
        elif bold is not None:
            out.append("\\fB" + esc(bold) + "\\fR")
        elif ltext is not None:
            out.append(esc(ltext))
        else:
            out.append("\\fI" + esc(ital) + "\\fR")
        pos = m.end()
    out.append(esc(text[pos:]))
    return "".join(out)


def table_rows(lines):
    rows = []
    for ln in lines:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", ln.strip().strip("|"))]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue
        rows.append([c.replace("\\|", "|") for c in cells])
    return rows


def convert(md, version, docdir="/usr/local/share/doc/trove"):
    md = md.replace("@DOCDIR@", docdir)
    lines = md.splitlines()
    manpage = any(ln.strip() == "## NAME" for ln in lines)
    out = []
    epoch = os.environ.get("SOURCE_DATE_EPOCH")  # reproducible builds
    day = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).date() \
        if epoch else datetime.date.today()
    date = day.isoformat()
    out.append('.TH TROVE 1 "%s" "trove %s" "User Commands"' % (date, version))
    if not manpage:
        out.append(".SH NAME")
        out.append("trove \\- local-first hybrid search for markdown knowledge bases")
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(line_guard(inline(" ".join(para))))
            para.clear()

    while i < len(lines):
        ln = lines[i]
        if ln.lstrip().startswith("<!--"):   # a comment for the page's editors
            flush()
            while i < len(lines) and "-->" not in lines[i]:
                i += 1
            i += 1
            continue
        if ln.startswith("```"):
            flush()
            i += 1
            out.append(".PP")
            out.append(".RS 4")
            out.append(".nf")
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(line_guard(esc(lines[i])))
                i += 1
            out.append(".fi")
            out.append(".RE")
            i += 1
            continue
        m = re.match(r"(#+)\s+(.*)", ln)
        if m:
            flush()
            level, title = len(m.group(1)), m.group(2).strip()
            if level == 1:
                if i == 0 and manpage:
                    pass   # the title line: .TH says it
                elif i == 0:
                    out.append(".SH DESCRIPTION")
                else:
                    out.append(".SH " + inline(title.upper()))
            elif level == 2:
                out.append(".SH " + inline(title.upper()))
            else:
                out.append(".SS " + inline(title))
            i += 1
            continue
        if ln.lstrip().startswith("|"):
            flush()
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            rows = table_rows(block)
            header, body = rows[0], rows[1:]
            for r in body:
                out.append(".TP")
                out.append(line_guard(inline(r[0])))
                rest = [("%s: %s" % (header[k], r[k]) if len(r) > 2 else r[k])
                        for k in range(1, len(r)) if r[k]]
                out.append(line_guard(inline("; ".join(rest))))
            continue
        m = re.match(r"\s*([-*]|\d+\.)\s+(.*)", ln)
        if m:
            flush()
            item = [m.group(2)]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip() \
                    and not re.match(r"\s*([-*]|\d+\.)\s+", lines[i]):
                item.append(lines[i].strip())
                i += 1
            bullet = "\\(bu" if m.group(1) in "-*" else m.group(1)
            out.append('.IP "%s" 4' % bullet)
            out.append(line_guard(inline(" ".join(item))))
            continue
        if not ln.strip():
            flush()
        else:
            para.append(ln.strip())
        i += 1
    flush()
    if not manpage:
        out.append(".SH SEE ALSO")
        out.append("The full documentation: docs/ in the trove source tree "
                   "(architecture.md, schema.md, embedding.md, performance.md).")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    version = sys.argv[3] if len(sys.argv) > 3 else "0"
    with open(sys.argv[1], encoding="utf-8") as fh:
        md = fh.read()
    roff = convert(md, version, *sys.argv[4:5])
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(roff)
    os.replace(tmp, sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
