/* cli — the `trove` command line: global options, command dispatch, and the
 * helpers every command shares (opening the config and the index, printing
 * errors with the right exit code).
 *
 * Exit codes: 0 success (also when nothing matched), 1 runtime errors
 * (missing collection, unreadable index, missing file), 2 usage errors. */
#ifndef TROVE_CLI_H
#define TROVE_CLI_H

#include <stdio.h>

#include "api/api.h"
#include "config/config.h"
#include "daemon/client.h"
#include "embed/embed.h"
#include "store/store.h"
#include "util/err.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2 };

typedef struct cli {
    const char *index_path;   /* --index, else $TROVE_INDEX, else default */
    int color;                /* stdout is a TTY and NO_COLOR is unset */
    int stderr_tty;
    int no_daemon;            /* --no-daemon or TROVE_NO_DAEMON=1: always answer cold */
} cli;

typedef int (*cli_cmd_fn)(cli *c, int argc, char **argv);

/* Print "trove: <detail or strerror>" and return the exit code for `err`. */
int cli_error(trove_err err);
/* Print a usage error for `cmd` and return EXIT_USAGE. */
int cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Load the config; on failure prints the error and returns the exit code. */
int cli_load_config(config *cfg);
/* The config as read once per process, for lookups that only read it (the
 * daemon check, the model path): a `trove search` answered by the daemon
 * parsed config.yaml twice before. NULL when it cannot be read (the error
 * is cleared: the cold path reads it again and reports it). */
const config *cli_config_once(void);
/* Open the index (readonly for queries). Prints errors. */
int cli_open_store(cli *c, int readonly, store **out);
/* Open the read API (config + index path). Prints errors. */
int cli_open_api(cli *c, api **out);

/* The running daemon of c's index, when it should answer (docs/daemon.md):
 * NULL when --no-daemon, TROVE_NO_DAEMON, `daemon: off`, or none listens. */
dcl *cli_daemon(cli *c);
/* The one fallback rule of the commands: op (WIRE_OP_*, api/wire.h) on
 * args answered by the daemon when one runs and can (dcl_try), else cold
 * on the api opened into *a. EXIT_OK with *err the answer's error (out
 * filled on TROVE_OK); another exit code when the index could not be
 * opened (said). */
int cli_answer(cli *c, api **a, int op, void *args, void *out, trove_err *err);

/* Commands (one file each). */
int cmd_collection(cli *c, int argc, char **argv);
int cmd_context(cli *c, int argc, char **argv);
int cmd_update(cli *c, int argc, char **argv);
int cmd_search(cli *c, int argc, char **argv);
/* The daemon's render hook (daemon/server.h dmn_opts.render): a search or
 * vsearch answer as this CLI prints it (stdout to out, stderr to err; the
 * exit code returned), for a client that sent its output options
 * (cmd_search.c); -1 for other ops or a malformed form. */
int cli_render(int op, const void *args, const void *result, const json_t *how, tbuf *out,
               tbuf *err);
int cmd_get(cli *c, int argc, char **argv);
int cmd_multi_get(cli *c, int argc, char **argv);
int cmd_ls(cli *c, int argc, char **argv);
/* cmd_graph.c */
int cmd_similar(cli *c, int argc, char **argv);
int cmd_links(cli *c, int argc, char **argv);
int cmd_dupes(cli *c, int argc, char **argv);
int cmd_eval(cli *c, int argc, char **argv);
int cmd_status(cli *c, int argc, char **argv);
int cmd_check(cli *c, int argc, char **argv);
int cmd_model(cli *c, int argc, char **argv);
/* `trove model pull|list|use` (cmd_model_pull.c), called by cmd_model(). */
int cmd_model_manage(cli *c, int argc, char **argv);
int cmd_daemon(cli *c, int argc, char **argv);
int cmd_mcp(cli *c, int argc, char **argv);
int cmd_serve(cli *c, int argc, char **argv);
int cmd_tokenize(cli *c, int argc, char **argv);
int cmd_embed(cli *c, int argc, char **argv);
int cmd_snapshot(cli *c, int argc, char **argv);
int cmd_publish(cli *c, int argc, char **argv);
int cmd_vsearch(cli *c, int argc, char **argv);
int cmd_query(cli *c, int argc, char **argv);
/* The reranker for `query`: flag, else $TROVE_RERANK_MODEL, else the
 * config's `rerank_model:`, resolved like the embedding model
 * (models_resolve_reranker); NULL when none, or when it does not resolve:
 * that is then said once on stderr, and query re-scores lexically
 * (borrowed; valid until the next call). */
const char *cli_reranker_path(const char *flag, api *a);

/* The active embedding model's path through models_resolve(): --model, else
 * $TROVE_EMBED_MODEL, else `embed_model:` in config.yaml; each a catalogue
 * name, a GGUF file or model2vec folder, or a name in the models folder.
 * NULL if none is set, or when the spec does not resolve (a catalogue model
 * not pulled yet, a missing file): cli_model_error() then says why. A spec
 * is never handed on as written, so a bare name never opens a file of the
 * current folder. Valid until the process exits. */
const char *cli_model_path(const char *flag);
/* Why the last cli_model_path() gave NULL: TROVE_OK when no model is set,
 * else the error (also set as the current trove_fail, for cli_error()) and
 * its message in *msg (may be NULL; borrowed). */
trove_err cli_model_error(const char **msg);

typedef struct cli_embed_args {
    const char *model;
    int force, prune, batch, threads;
    double commit_secs;
} cli_embed_args;
/* The embedding pass (api_embed) with progress on stderr and a summary on
 * stdout; returns the exit code. */
int cli_embed_pass(cli *c, api *a, const cli_embed_args *args);

/* Option parsing helpers: match "--name VALUE" or "--name=VALUE"; a short
 * option ("-n") also takes its value attached ("-n5"). */
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **value);
/* The arguments of a command that takes positionals only (and --json when
 * `json` is not NULL): they go to pos[0..*n) (at most cap; a `--` ends the
 * options). --help prints `help` to stdout. Returns -1 to go on, else the
 * exit code (0 after --help; 2 after a usage error, which names the
 * unknown option or the extra argument). */
int cli_positionals(const char *cmd, const char *help, int argc, char **argv, int from, int *json,
                    const char **pos, size_t cap, size_t *n);
/* A positive whole number of an option (value NULL: missing): 1 and *out,
 * or 0 (the caller reports the usage error). */
int cli_opt_positive(const char *value, long *out);

#endif
