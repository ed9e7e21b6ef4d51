# bash completion for trove. Installed as
# $PREFIX/share/bash-completion/completions/trove.
#
# Commands, subcommands and options are read from trove itself (`trove
# --help`, `trove COMMAND --help`), so the completion follows the binary it
# is installed with; collection names come from `trove collection list`
# (tab-separated, so names with spaces stay whole).

_trove_commands()
{
    "$1" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'
}

# TROVE CMD: the subcommands of CMD, the words after "trove CMD" in the
# usage lines of its help ("stop | status" names two).
_trove_subcommands()
{
    "$1" "$2" --help 2>/dev/null | awk -v c="$2" '
        /^(usage: +|[ \t]+)trove / {
            for (i = 1; i < NF && !($i == "trove" && $(i + 1) == c); i++) ;
            for (j = i + 2; j <= NF; j += 2) {
                if ($j !~ /^[a-z][a-z-]*$/) break
                print $j
                if ($(j + 1) != "|") break
            }
        }' | sort -u
}

_trove_help()
{
    # TROVE CMD [SUB]: the subcommand's own help first, else the command's.
    local h
    h=$("$@" --help 2>/dev/null)
    [[ $h == *--* || $# -lt 3 ]] || h=$("$1" "$2" --help 2>/dev/null)
    printf '%s\n' "$h"
}

_trove_options()
{
    _trove_help "$@" | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

# TROVE CMD [SUB] OPT: does OPT take a value ("--opt VALUE" in the help)?
_trove_takes_value()
{
    local opt=${!#}
    _trove_help "${@:1:$#-1}" | grep -qE -- "(^|[ ,[])$opt[ =]\\[?[A-Z]"
}

_trove_collections()
{
    "$1" collection list 2>/dev/null | awk -F '\t' 'NF > 1 {print $1}'
}

# Complete from a newline-separated list; entries may hold spaces.
_trove_reply()
{
    local IFS=$'\n' c=${cur//\\/}
    c=${c#[\"\']}
    COMPREPLY=($(compgen -W "$1" -- "$c"))
}

_trove()
{
    local cur prev words cword
    _init_completion 2>/dev/null || {
        cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
    }
    local trove=${words[0]} i cmd= sub=
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --index) ((i++)) ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=${words[i]}; elif [[ -z $sub ]]; then sub=${words[i]}; fi ;;
        esac
    done
    case $prev in
        --index|--model|--reranker|--expand-model) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        -c|--collection) _trove_reply "$(_trove_collections "$trove")"; return ;;
    esac
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--index --no-daemon --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_trove_commands "$trove")" -- "$cur"))
        fi
        return
    fi
    # The subcommand is the first word after the command, if it is one.
    local subs
    subs=$(_trove_subcommands "$trove" "$cmd")
    [[ -n $sub && $'\n'$subs$'\n' == *$'\n'$sub$'\n'* ]] || sub=
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_trove_options "$trove" "$cmd" ${sub:+"$sub"})" -- "$cur"))
        return
    fi
    # The value of an option (-n 5, --folder work/): nothing to offer.
    if [[ $prev == -?* ]] && _trove_takes_value "$trove" "$cmd" ${sub:+"$sub"} "$prev"; then
        COMPREPLY=()
        return
    fi
    if [[ -n $subs && -z $sub ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        return
    fi
    case $cmd/$sub in
        update/|ls/|collection/remove|collection/rm|collection/rename|collection/mv|\
        context/add|context/rm|context/remove)
            _trove_reply "$(_trove_collections "$trove")" ;;
        collection/add) COMPREPLY=($(compgen -d -- "$cur")) ;;
        search/|vsearch/|query/|tokenize/|daemon/*|snapshot/*|collection/*|context/*|publish/*|\
        status/|check/|mcp/|serve/|embed/|model/list|model/pull|dupes/|eval/)
            COMPREPLY=() ;;   # query words, ids, names: nothing to complete from
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
    esac
}
complete -o filenames -F _trove trove
