#!/usr/bin/env python3
"""test-map: the module -> test table of docs/testing.md.

Unit tests and fuzz targets are found by what they #include (a test of a
module includes its header); the e2e column is kept here by folder, since
the e2e tests drive the binary. `python3 scripts/test-map.py` prints the
table; `--check` exits 1 when docs/testing.md's copy is stale (a new module
or test without its row)."""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

E2E = {
    'api': 'test_cli_query, test_query_expand, test_cli_search, test_cli_graph, test_daemon (cold/daemon parity)',
    'chunk': 'test_cli_details, test_cli_search',
    'cjk': 'test_cli_cjk',
    'cli': 'every test_cli_*, notably test_cli_options, test_cli_errors, test_cli_messages, test_cli_output',
    'config': 'test_cli_config, test_cli_collections',
    'daemon': 'test_daemon, test_daemon_locks, test_daemon_vcache',
    'embed': 'test_model_engine, test_model_qwen3, test_model_minilm, test_model_static, '
             'test_gemma3_tokenizer, test_qwen3_tokcache, test_model_default_shape, test_generate',
    'fetch': 'test_model_pull',
    'fs': 'test_cli_inside, test_safety, test_cli_update',
    'index': 'test_cli_update, test_cli_vectors, test_day_in_life',
    'mcp': 'test_mcp',
    'md': 'test_cli_details, test_cli_get',
    'models': 'test_model_pull, test_cli_vectors',
    'search': 'test_cli_search, test_cli_ranking, test_cli_fusion, test_cli_query, test_query_expand, '
              'test_cli_translations, test_cli_graph',
    'store': 'test_cli_damage, test_cli_snapshot, test_faults',
    'text': 'test_cli_search, test_cli_cjk, test_cli_bytes',
    'util': 'test_cli_bytes, test_cli_output',
    'vec': 'test_cli_vectors',
}


def includers(pattern):
    res = {}
    for p in sorted(glob.glob(os.path.join(ROOT, pattern))):
        name = os.path.basename(p).rsplit('.', 1)[0]
        for inc in re.findall(r'#include "([^"]+)"', open(p, encoding='utf-8').read()):
            res.setdefault(inc, set()).add(name)
    return res


def table():
    unit = includers('tests/unit/test_*.c')
    fuzz = includers('fuzz/fuzz_*.c')
    out = ['| module (header) | unit tests (tests/unit) | fuzz targets (fuzz/) |', '|---|---|---|']
    folders = set()
    for h in sorted(glob.glob(os.path.join(ROOT, 'src/**/*.h'), recursive=True)):
        rel = os.path.relpath(h, os.path.join(ROOT, 'src'))
        if rel.endswith('_int.h'):
            continue
        folders.add(rel.split('/')[0])
        u = ', '.join(sorted(unit.get(rel, ()))) or '—'
        z = ', '.join(sorted(fuzz.get(rel, ()))) or '—'
        out.append(f'| `{rel}` | {u} | {z} |')
    out += ['', '| folder | e2e tests (tests/e2e) |', '|---|---|']
    for d in sorted(folders):
        out.append(f'| `src/{d}/` | {E2E.get(d, "—")} |')
    return '\n'.join(out) + '\n'


def main():
    t = table()
    if '--check' in sys.argv:
        doc = open(os.path.join(ROOT, 'docs/testing.md'), encoding='utf-8').read()
        if t not in doc:
            print('docs/testing.md: the module -> test table is stale; '
                  'paste the output of python3 scripts/test-map.py', file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(t)
    return 0


if __name__ == '__main__':
    sys.exit(main())
