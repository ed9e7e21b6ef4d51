# bash completion for trove. Installed as
# $PREFIX/share/bash-completion/completions/trove.
#
# Commands and options are read from trove itself (`trove --help`,
# `trove COMMAND --help`), so the completion follows the binary it is
# installed with; collection names come from `trove collection list`.

_trove_commands()
{
    "$1" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'
}

_trove_options()
{
    # TROVE SUB [SUBSUB]: the subcommand's own help first, else the command's.
    local o
    o=$("$@" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
    [[ -n $o || $# -lt 3 ]] || o=$("$1" "$2" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
    printf '%s\n' "$o"
}

_trove_collections()
{
    "$1" collection list 2>/dev/null | awk 'NF && $1 !~ /:$/ {print $1}'
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
        --index|--full|--model) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        -c|--collection) COMPREPLY=($(compgen -W "$(_trove_collections "$trove")" -- "$cur")); return ;;
    esac
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--index --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_trove_commands "$trove")" -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_trove_options "$trove" "$cmd" ${sub:+"$sub"})" -- "$cur"))
        return
    fi
    case $cmd in
        collection|context|model|snapshot)
            if [[ -z $sub ]]; then
                # Subcommands are listed as a|b|c in the command's summary.
                local subs
                subs=$("$trove" --help 2>/dev/null | awk -v c="$cmd" '$1 == c {print $2}' | tr '|' ' ')
                COMPREPLY=($(compgen -W "$subs" -- "$cur"))
                return
            fi ;;
        update|ls) COMPREPLY=($(compgen -W "$(_trove_collections "$trove")" -- "$cur")); return ;;
    esac
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _trove trove
