/* api_publish — `trove publish opensearch` (see api.h): what to send, read
 * from the index (store_pub.h) in one read transaction, turned into
 * OpenSearch bodies (publish/pub.h) and sent (publish/pub_send.h) or
 * written to a folder (--dry-run). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_int.h"
#include "publish/pub.h"
#include "publish/pub_send.h"
#include "search/meta.h"
#include "store/store_pub.h"
#include "text/date.h"
#include "util/fsutil.h"
#include "util/mem.h"

#define PUB_DEFAULT_INDEX "trove"
/* Doc ids read per page of a full publish. */
#define PUB_PAGE 256

trove_err api_publish_index_check(const char *name)
{
    size_t n = strlen(name);
    int bad = n == 0 || n > 255 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
              strchr("-_+", name[0]);
    for (size_t i = 0; !bad && i < n; i++)
        bad = (name[i] >= 'A' && name[i] <= 'Z') || strchr("\\/*?\"<>|,# :", name[i]) ||
              (unsigned char)name[i] < 0x20;
    if (bad)
        return trove_fail(TROVE_EUSAGE, "'%s' is not an OpenSearch index name (lower case, "
                          "no spaces or \\/*?\"<>|,#:, not starting with - _ +)", name);
    return TROVE_OK;
}

void api_publish_result_free(api_publish_result *r)
{
    free(r->model);
    free(r->first_error);
    free(r->url);
    free(r->index);
    memset(r, 0, sizeof *r);
}

/* ---- one run ---- */

typedef struct pub_run {
    api *a;
    store *st;
    const api_publish_opts *o;
    api_publish_result *out;
    const char *index;
    pub_index_info info;
    char **langs;
    size_t n_langs;
    char *index_id, *model_name, *fingerprint;
    int64_t model_id;
    meta_filter mf;
    int have_mf;
    pub_conn *conn;              /* NULL: dry run */
    int file_no;
    pub_bulk w;
    char **after;                /* ids sent as upserts (incremental) */
    size_t n_after, cap_after;
} pub_run;

static char *dir_file(const pub_run *r, const char *name)
{
    tbuf b = {0};
    tbuf_printf(&b, "%s/%s", r->o->dry_run, name);
    return tbuf_detach(&b);
}

static trove_err write_file(const pub_run *r, const char *name, const char *data, size_t len)
{
    char *path = dir_file(r, name);
    FILE *f = fopen(path, "wb");
    trove_err rc = TROVE_OK;
    if (!f || fwrite(data, 1, len, f) != len || (len && data[len - 1] != '\n' && fputc('\n', f) < 0))
        rc = trove_fail(TROVE_EIO, "cannot write %s: %s", path, strerror(errno));
    if (f && fclose(f) != 0 && rc == TROVE_OK)
        rc = trove_fail(TROVE_EIO, "cannot write %s: %s", path, strerror(errno));
    free(path);
    return rc;
}

/* A dry run's folder: made when missing, our earlier files removed. */
static trove_err dry_dir(const pub_run *r)
{
    if (fs_mkdir_p(r->o->dry_run) != 0)
        return trove_fail(TROVE_EIO, "cannot create %s: %s", r->o->dry_run, strerror(errno));
    DIR *d = opendir(r->o->dry_run);
    if (!d)
        return trove_fail(TROVE_EIO, "cannot read %s: %s", r->o->dry_run, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "bulk-", 5) == 0 && n > 7 && strcmp(e->d_name + n - 7, ".ndjson") == 0) {
            char *p = dir_file(r, e->d_name);
            unlink(p);
            free(p);
        }
    }
    closedir(d);
    static const char *const ours[] = {"index.json", "pipeline.json", "meta.json",
                                       "delete-stale.json"};
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++) {
        char *p = dir_file(r, ours[i]);
        unlink(p);
        free(p);
    }
    return TROVE_OK;
}

static trove_err flush_batch(void *ctx, pub_batch *b)
{
    pub_run *r = ctx;
    r->out->batches++;
    if (r->conn)
        return pub_send_batch(r->conn, r->index, b);
    char name[32];
    snprintf(name, sizeof name, "bulk-%04d.ndjson", ++r->file_no);
    return write_file(r, name, b->body.data, b->body.len);
}

/* ---- what the index is ---- */

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The vault's languages, from meta.lang_counts ({"en": 12, ...}). */
static trove_err read_langs(pub_run *r)
{
    char *v = NULL;
    trove_err rc = store_meta_get(r->st, "lang_counts", &v);
    json_t *j = v ? json_loads(v, 0, NULL) : NULL;
    free(v);
    const char *k;
    json_t *n;
    size_t cap = 0;
    if (json_is_object(j))
        json_object_foreach(j, k, n) {
            if (!*k || !pub_lang_analyzer(k))
                continue;
            xgrow(&r->langs, &cap, r->n_langs + 1, sizeof *r->langs);
            r->langs[r->n_langs++] = xstrdup(k);
        }
    json_decref(j);
    if (r->n_langs)
        qsort(r->langs, r->n_langs, sizeof *r->langs, cmp_str);
    return rc;
}

/* The vectors published: those of the model with the most live vectors
 * (store_vec_model_pick); its fingerprint goes into _meta, so a remote
 * search embeds its query with the same model. */
static trove_err read_model(pub_run *r)
{
    int dim = 0;
    trove_err rc = store_vec_model_pick(r->st, NULL, &r->model_id, &dim, &r->model_name);
    if (rc || !r->model_id)
        return rc;
    store_vec_model *m;
    size_t n;
    if ((rc = store_vec_models(r->st, &m, &n)))
        return rc;
    for (size_t i = 0; i < n; i++)
        if (m[i].id == r->model_id)
            r->fingerprint = xstrdup(m[i].fingerprint);
    store_vec_models_free(m, n);
    r->info.dim = dim;
    return TROVE_OK;
}

static trove_err read_info(pub_run *r)
{
    store_snapshot snap;
    trove_err rc = store_snapshot_current(r->st, &snap);
    if (rc)
        return rc;
    r->info.snapshot = snap.id;
    store_snapshot_clear(&snap);
    if (r->info.snapshot == 0)
        return trove_fail(TROVE_ENOENT, "the index has no snapshot yet: run `trove update` first");
    if ((rc = store_meta_get(r->st, "index_id", &r->index_id)))
        return rc;
    if ((rc = read_langs(r)) || (rc = read_model(r)))
        return rc;
    r->info.index_id = r->index_id ? r->index_id : "";
    r->info.model = r->model_name ? r->model_name : "";
    r->info.fingerprint = r->fingerprint ? r->fingerprint : "";
    r->info.langs = (const char *const *)r->langs;
    r->info.n_langs = r->n_langs;
    r->out->dim = r->info.dim;
    r->out->model = r->model_name ? xstrdup(r->model_name) : NULL;
    return TROVE_OK;
}

/* ---- what was published before ---- */

/* NULL for a dry run without a URL (it publishes everything). */
static char *record_key(const pub_run *r)
{
    if (!r->o->url)
        return NULL;
    char *url = pub_url_display(r->o->url);
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        url[--n] = '\0';
    tbuf b = {0};
    tbuf_printf(&b, "publish:%s/%s", url, r->index);
    free(url);
    return tbuf_detach(&b);
}

/* Ours: "SNAPSHOT INDEX_ID [MISSING_VECTORS]" under record_key; 0 when
 * none or of another index. */
static trove_err our_record(pub_run *r, int64_t *snap, int64_t *missing)
{
    *snap = 0;
    *missing = 0;
    char *key = record_key(r), *v = NULL;
    if (!key)
        return TROVE_OK;
    trove_err rc = store_meta_get(r->st, key, &v);
    free(key);
    long long s, m = 0;
    char id[64];
    if (v && sscanf(v, "%lld %63s %lld", &s, id, &m) >= 2 && strcmp(id, r->info.index_id) == 0 &&
        s > 0) {
        *snap = s;
        *missing = m > 0 ? m : 0;
    }
    free(v);
    return rc;
}

/* Theirs: the index's _meta.trove; *exists 0 when there is no index. */
static trove_err their_record(pub_run *r, int *exists, pub_meta *t)
{
    memset(t, 0, sizeof *t);
    *exists = 0;
    tbuf path = {0};
    tbuf_printf(&path, "%s/_mapping", r->index);
    fetch_http_resp rs;
    trove_err rc = pub_request(r->conn, "GET", path.data, NULL, &rs);
    if (rc == TROVE_OK && rs.status != 404) {
        if (rs.status != 200)
            rc = trove_fail(TROVE_EIO, "GET %s/%s: HTTP %ld", r->out->url, path.data, rs.status);
        else if ((rc = pub_meta_parse(rs.body.data ? rs.body.data : "", rs.body.len, t)) ==
                 TROVE_OK && !t->is_trove)
            rc = trove_fail(TROVE_EEXIST, "%s/%s exists and was not made by trove publish: "
                            "choose another --index", r->out->url, r->index);
        *exists = rc == TROVE_OK;
    }
    fetch_http_resp_free(&rs);
    tbuf_free(&path);
    return rc;
}

/* Can we publish into their index, and from which snapshot on? */
static trove_err check_theirs(pub_run *r, int exists, const pub_meta *t, int64_t ours,
                              int64_t *missing, int64_t *since)
{
    *since = 0;
    if (!exists)
        return TROVE_OK;
    if (t->format != PUB_FORMAT || t->dim != r->info.dim ||
        strcmp(t->fingerprint, r->info.fingerprint) != 0)
        return trove_fail(TROVE_EUNSUPPORTED,
                          "%s/%s was made for other documents (format %d, %d-d vectors of "
                          "model '%s'; this index has format %d, %d-d of '%s'): publish to "
                          "another --index, or delete that one first", r->out->url, r->index,
                          t->format, t->dim, t->fingerprint, PUB_FORMAT, r->info.dim,
                          r->info.fingerprint);
    if (strcmp(t->index_id, r->info.index_id) != 0) {
        if (!r->o->full)
            return trove_fail(TROVE_EEXIST,
                              "%s/%s holds another trove index (id %s; this one is %s, e.g. "
                              "after `update --rebuild`): publish each index to its own "
                              "--index, or take it over with --full", r->out->url, r->index,
                              t->index_id, r->info.index_id);
        return TROVE_OK;
    }
    /* Both sides' records, the older one: a publish that failed after
     * their _meta moved, or ours lost with a rebuild, must not skip a
     * change. */
    *since = t->snapshot;
    if (ours > 0 && ours < *since)
        *since = ours;
    if (t->missing_vectors > *missing)
        *missing = t->missing_vectors;
    return TROVE_OK;
}

/* ---- documents ---- */

static trove_err note_date(pub_run *r, int64_t doc_id, char out[11], const char **source)
{
    if (!r->have_mf) {
        trove_err rc = meta_filter_prepare(r->st, &r->a->cfg, NULL, 0, NULL, NULL, date_now(),
                                           &r->mf);
        if (rc)
            return rc;
        r->have_mf = 1;
    }
    double days;
    trove_err rc = meta_note_date(r->st, &r->mf, doc_id, &days, source);
    if (rc == TROVE_OK)
        date_format(days, out);
    return rc;
}

static void remember_after(pub_run *r, const char *id)
{
    xgrow(&r->after, &r->cap_after, r->n_after + 1, sizeof *r->after);
    r->after[r->n_after++] = xstrdup(id);
}

/* Every chunk of note doc_id as an upsert; nothing when it is gone. */
static trove_err send_note(pub_run *r, int64_t doc_id, int remember)
{
    store_pub_doc d;
    int found;
    trove_err rc = store_pub_doc_load(r->st, doc_id, &d, &found);
    if (rc || !found)
        return rc;
    char date[11];
    const char *source = NULL;
    rc = note_date(r, doc_id, date, &source);
    int dim = r->info.dim;
    float *vecs = dim ? xcalloc(d.n_chunks ? d.n_chunks : 1, (size_t)dim * sizeof *vecs) : NULL;
    unsigned char *have = dim ? xcalloc(d.n_chunks ? d.n_chunks : 1, 1) : NULL;
    for (size_t i = 0; rc == TROVE_OK && dim && i < d.n_chunks; i++) {
        size_t n = 0;
        rc = store_vec_chunk_get(r->st, d.chunks[i].id, r->model_id, dim,
                                 vecs + i * (size_t)dim, &n);
        have[i] = n > 0;
        r->out->no_vector += n == 0;
    }
    pub_doc_src src = {.doc = &d, .date = date, .date_source = source,
                       .snapshot = r->info.snapshot, .dim = dim, .vecs = vecs, .have = have,
                       .langs = r->info.langs, .n_langs = r->info.n_langs};
    for (size_t i = 0; rc == TROVE_OK && i < d.n_chunks; i++) {
        char id[32];
        pub_chunk_id(d.doc.docid, d.chunks[i].seq, id);
        char *json = pub_chunk_source(&src, i);
        rc = pub_bulk_index(&r->w, id, json);
        free(json);
        r->out->upserts++;
        if (remember)
            remember_after(r, id);
    }
    r->out->notes++;
    free(vecs);
    free(have);
    store_pub_doc_clear(&d);
    return rc;
}

static trove_err send_all(pub_run *r)
{
    int64_t after = 0;
    for (;;) {
        int64_t *ids;
        size_t n;
        trove_err rc = store_pub_doc_ids(r->st, after, PUB_PAGE, &ids, &n);
        for (size_t i = 0; rc == TROVE_OK && i < n; i++)
            rc = send_note(r, ids[i], 0);
        if (n)
            after = ids[n - 1];
        free(ids);
        if (rc || n < PUB_PAGE)
            return rc;
        if (r->o->stop && *r->o->stop)
            return trove_fail(TROVE_EINTR, "publish interrupted");
    }
}

static trove_err send_changes(pub_run *r, const store_pub_changes *c)
{
    trove_err rc = TROVE_OK;
    for (size_t i = 0; rc == TROVE_OK && i < c->n_docs; i++)
        rc = send_note(r, c->doc_ids[i], 1);
    if (rc)
        return rc;
    if (r->n_after)
        qsort(r->after, r->n_after, sizeof *r->after, cmp_str);
    /* A chunk id a changed note had before and no note has now. Several
     * before-images may name one id (a note renamed back): delete once. */
    char **gone = xmalloc((c->n_before ? c->n_before : 1) * sizeof *gone);
    size_t n_gone = 0;
    for (size_t i = 0; i < c->n_before; i++)
        if (!r->n_after || !bsearch(&c->before_ids[i], r->after, r->n_after, sizeof *r->after,
                                    cmp_str))
            gone[n_gone++] = c->before_ids[i];
    if (n_gone)
        qsort(gone, n_gone, sizeof *gone, cmp_str);
    for (size_t i = 0; rc == TROVE_OK && i < n_gone; i++) {
        if (i && strcmp(gone[i], gone[i - 1]) == 0)
            continue;
        rc = pub_bulk_delete(&r->w, gone[i]);
        r->out->deletes++;
    }
    free(gone);
    return rc;
}

/* ---- the steps around the documents ---- */

static trove_err put_json(pub_run *r, const char *method, const char *path, const char *file,
                          const char *body)
{
    if (!r->conn)
        return write_file(r, file, body, strlen(body));
    return pub_request_ok(r->conn, method, path, body);
}

static trove_err prepare_target(pub_run *r, int exists)
{
    trove_err rc = TROVE_OK;
    if (!exists || !r->conn) {
        char *body = pub_index_body(&r->info);
        rc = put_json(r, "PUT", r->index, "index.json", body);
        free(body);
        r->out->created = r->conn != NULL;
    }
    if (rc == TROVE_OK) {
        /* The pipeline is PUT every time: cheap, and a pipeline deleted
         * by hand comes back. Weights: trove's keyword and vector ones. */
        char *name = pub_pipeline_name(r->index);
        tbuf path = {0};
        tbuf_printf(&path, "_search/pipeline/%s", name);
        char *body = pub_pipeline_body(0.5, 0.5, 60);
        rc = put_json(r, "PUT", path.data, "pipeline.json", body);
        free(body);
        tbuf_free(&path);
        free(name);
    }
    return rc;
}

static trove_err finish_target(pub_run *r, int existed)
{
    trove_err rc = TROVE_OK;
    if (r->out->full && (existed || !r->conn)) {
        char *body = pub_stale_body(r->info.snapshot);
        tbuf path = {0};
        tbuf_printf(&path, "%s/_delete_by_query?refresh=true", r->index);
        rc = put_json(r, "POST", path.data, "delete-stale.json", body);
        tbuf_free(&path);
        free(body);
    }
    if (rc == TROVE_OK) {
        char *body = pub_meta_body(&r->info);
        tbuf path = {0};
        tbuf_printf(&path, "%s/_mapping", r->index);
        rc = put_json(r, "PUT", path.data, "meta.json", body);
        tbuf_free(&path);
        free(body);
    }
    return rc;
}

/* Ours, after theirs succeeded: a write of meta only (no snapshot). */
static trove_err record_ours(pub_run *r)
{
    store *st;
    trove_err rc = store_open(r->a->index_path, 0, &st);
    if (rc)
        return rc;
    char *key = record_key(r);
    tbuf v = {0};
    tbuf_printf(&v, "%lld %s %zu", (long long)r->info.snapshot, r->info.index_id,
                r->out->no_vector);
    rc = store_begin(st);
    if (rc == TROVE_OK && (rc = store_meta_set(st, key, v.data)) == TROVE_OK)
        rc = store_commit(st);
    else if (rc == TROVE_OK)
        store_rollback(st);
    tbuf_free(&v);
    free(key);
    store_close(st);
    return rc;
}

/* missing: chunks the last publish sent before they had vectors. Adding
 * vectors (`trove embed`) is no snapshot, so the undo log cannot name them:
 * such a publish is followed by a full one. */
static trove_err plan_and_send(pub_run *r, int exists, int64_t since, int64_t missing)
{
    store_pub_changes c = {0};
    trove_err rc = TROVE_OK;
    r->out->from = since;
    if (r->o->full) {
        r->out->why_full = "--full";
    } else if (since == 0) {
        r->out->why_full = "first publish to this index";
    } else if (missing > 0) {
        r->out->why_full = "the last publish sent chunks before they had vectors";
    } else if ((rc = store_pub_changes_since(r->st, since, &c)) == TROVE_OK && !c.complete) {
        r->out->why_full = "the snapshot last published is no longer kept, or a collection was "
                           "renamed or removed since";
    }
    r->out->full = r->out->why_full != NULL;
    if (rc == TROVE_OK && r->conn && r->out->full) {
        store_counts n;
        if ((rc = store_counts_get(r->st, &n)) == TROVE_OK)
            pub_conn_set_total(r->conn, (size_t)n.chunks);
    }
    if (rc == TROVE_OK)
        rc = prepare_target(r, exists);
    if (rc == TROVE_OK) {
        pub_bulk_init(&r->w, r->o->batch_bytes, r->o->batch_actions, flush_batch, r);
        rc = r->out->full ? send_all(r) : send_changes(r, &c);
        trove_err fin = pub_bulk_finish(&r->w);
        rc = rc ? rc : fin;
    }
    store_pub_changes_clear(&c);
    if (r->conn) {
        pub_conn_done(r->conn);
        const pub_send_stats *s = pub_conn_stats(r->conn);
        r->out->retried = s->retried;
        r->out->failed = s->failed;
        if (s->first_error)
            r->out->first_error = xstrdup(s->first_error);
    }
    if (rc == TROVE_OK && r->out->failed)
        rc = trove_fail(TROVE_EIO, "%zu of %zu documents were refused (first: %s); nothing "
                        "recorded, the next publish sends them again", r->out->failed,
                        r->out->upserts + r->out->deletes, r->out->first_error);
    r->info.missing_vectors = (int64_t)r->out->no_vector;
    if (rc == TROVE_OK)
        rc = finish_target(r, exists);
    return rc;
}

static void run_free(pub_run *r)
{
    for (size_t i = 0; i < r->n_langs; i++)
        free(r->langs[i]);
    free(r->langs);
    for (size_t i = 0; i < r->n_after; i++)
        free(r->after[i]);
    free(r->after);
    free(r->index_id);
    free(r->model_name);
    free(r->fingerprint);
    if (r->have_mf)
        meta_filter_free(&r->mf);
    pub_conn_close(r->conn);
}

trove_err api_publish(api *a, const api_publish_opts *o, api_publish_result *out)
{
    memset(out, 0, sizeof *out);
    pub_run r = {.a = a, .o = o, .out = out, .index = o->index ? o->index : PUB_DEFAULT_INDEX};
    trove_err rc = api_publish_index_check(r.index);
    if (rc)
        return rc;
    if (!o->dry_run && !o->url)
        return trove_fail(TROVE_EUSAGE, "publish needs a URL or --dry-run DIR");
    out->index = xstrdup(r.index);
    out->url = o->dry_run ? xstrdup(o->dry_run) : pub_url_display(o->url);
    if (!o->dry_run) {
        pub_send_opts so = {.retries = o->retries, .timeout_s = o->timeout_s,
                            .progress = o->progress, .tty = o->tty, .stop = o->stop};
        if ((rc = pub_conn_open(o->url, &so, &r.conn)))
            return rc;
    } else if ((rc = dry_dir(&r))) {
        return rc;
    }
    if ((rc = api_reader(a, &r.st)) == TROVE_OK && (rc = store_read_begin(r.st)) == TROVE_OK) {
        int64_t ours = 0, since = 0, missing = 0;
        pub_meta t = {0};
        int exists = 0;
        rc = read_info(&r);
        if (rc == TROVE_OK)
            rc = our_record(&r, &ours, &missing);
        if (rc == TROVE_OK && r.conn && (rc = their_record(&r, &exists, &t)) == TROVE_OK)
            rc = check_theirs(&r, exists, &t, ours, &missing, &since);
        if (rc == TROVE_OK && !r.conn)
            since = o->full ? 0 : ours;
        out->to = r.info.snapshot;
        if (rc == TROVE_OK)
            rc = plan_and_send(&r, exists, since, missing);
        if (r.have_mf)
            meta_filter_close(&r.mf);   /* its blob handle, before the read ends */
        store_read_end(r.st);
        pub_meta_free(&t);
    }
    if (rc == TROVE_OK && r.conn)
        rc = record_ours(&r);
    run_free(&r);
    return rc;
}
