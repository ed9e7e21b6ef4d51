/* api_models — embedding models and rerankers shared by api handles (the
 * daemon's worker handles and its watcher's): each file is opened once, and
 * each use of a model holds that model's own lock. A slot lives while a
 * handle holds it; an unheld slot of a kind is closed when another model of
 * that kind is opened (as one handle's own model is replaced), and all are
 * closed by api_models_free().
 *
 * Locks: `mu` guards the list and is only ever held for list work, never
 * while a model loads (seconds for a GGUF file) or computes: a load puts a
 * "loading" slot in the list and opens the file without the lock; another
 * handle asking for the same model waits on `loaded` for that slot, and
 * everything else (status, other models) goes on. A slot's `use` lock is
 * taken after `mu` is released (api_model_get's callers), never the other
 * way round. */
#include <limits.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_int.h"
#include "search/vcache.h"
#include "util/pool.h"
#include "util/mem.h"

const char *const apim_kind_names[] = {[APIM_EMBED] = "embed", [APIM_RERANK] = "rerank",
                                       [APIM_GENERATE] = "generate"};

struct api_models {
    pthread_mutex_t mu;       /* the slot list, users, loads */
    pthread_cond_t loaded;    /* a loading slot finished (under mu) */
    api_model_slot *slots;
    long loads;
    vcache *vc;               /* vector segments, shared by every handle */
    pool *workers;            /* the searches' side work (the vector scan), one per CPU */
};

/* The cache's bound: TROVE_VEC_CACHE_MB (0 keeps nothing), else 1 GiB. */
static size_t vcache_bound(void)
{
    const char *v = getenv("TROVE_VEC_CACHE_MB");
    char *end;
    if (!v || !*v)
        return VCACHE_DEFAULT_BYTES;
    unsigned long long mb = strtoull(v, &end, 10);
    if (*end || v[0] == '-' || mb > ((size_t)-1 >> 20))
        return VCACHE_DEFAULT_BYTES;
    return (size_t)mb << 20;
}

api_models *api_models_new(void)
{
    api_models *m = xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->loaded, NULL);
    m->vc = vcache_new(vcache_bound());
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    m->workers = pool_new(cpus > 0 ? (int)cpus : 1);
    return m;
}

struct vcache *apim_vcache(api_models *m)
{
    return m->vc;
}

struct pool *apim_pool(api_models *m)
{
    return m->workers;
}

static void slot_free(api_model_slot *s)
{
    embed_close(s->model);
    pthread_mutex_destroy(&s->use);
    free(s->path);
    free(s->key);
    free(s);
}

void api_models_free(api_models *m)
{
    if (!m)
        return;
    for (api_model_slot *s = m->slots, *next; s; s = next) {
        next = s->next;
        slot_free(s);
    }
    pool_free(m->workers);
    vcache_free(m->vc);
    pthread_cond_destroy(&m->loaded);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void api_use_models(api *a, api_models *m)
{
    a->models = m;
}

/* Close the unheld slots of a kind (the caller holds m->mu). */
static void drop_unused(api_models *m, int kind)
{
    for (api_model_slot **p = &m->slots; *p;) {
        api_model_slot *s = *p;
        if (s->kind == kind && s->users == 0 && !s->loading) {
            *p = s->next;
            slot_free(s);
        } else {
            p = &s->next;
        }
    }
}

static char *key_of(const char *path)
{
    char buf[PATH_MAX];
    return xstrdup(realpath(path, buf) ? buf : path);
}

static void slot_unlink(api_models *m, api_model_slot *gone)
{
    for (api_model_slot **p = &m->slots; *p; p = &(*p)->next)
        if (*p == gone) {
            *p = gone->next;
            return;
        }
}

trove_err apim_get(api_models *m, int kind, const char *path, int key_param, int open_param,
                   apim_open_fn open, api_model_slot **held, embed_model **out)
{
    *out = NULL;
    char *key = key_of(path);
    pthread_mutex_lock(&m->mu);
    api_model_slot *s;
    for (;;) {
        s = m->slots;
        while (s && !(s->kind == kind && s->param == key_param && strcmp(s->key, key) == 0))
            s = s->next;
        if (!s || !s->loading)
            break;
        /* Another handle is opening it: wait for that load, not our own. */
        pthread_cond_wait(&m->loaded, &m->mu);
    }
    trove_err rc = TROVE_OK;
    if (s != *held) {
        if (*held)
            (*held)->users--;
        *held = NULL;
    }
    if (!s) {
        drop_unused(m, kind);
        s = xcalloc(1, sizeof *s);
        s->kind = kind;
        s->path = xstrdup(path);
        s->key = key;
        key = NULL;
        s->param = key_param;
        s->loading = 1;
        pthread_mutex_init(&s->use, NULL);
        s->next = m->slots;
        m->slots = s;
        /* The load runs without the list lock (see the top of the file). */
        pthread_mutex_unlock(&m->mu);
        embed_model *em = NULL;
        rc = open(path, open_param, &em);
        pthread_mutex_lock(&m->mu);
        s->loading = 0;
        if (rc == TROVE_OK) {
            s->model = em;
            m->loads++;
        } else {
            slot_unlink(m, s);   /* the waiters try for themselves */
            slot_free(s);
            s = NULL;
        }
        pthread_cond_broadcast(&m->loaded);
    }
    if (s && !*held) {
        s->users++;
        *held = s;
    }
    if (s)
        *out = s->model;
    pthread_mutex_unlock(&m->mu);
    free(key);
    return rc;
}

void apim_release(api_models *m, api_model_slot **held)
{
    if (!m || !*held)
        return;
    pthread_mutex_lock(&m->mu);
    (*held)->users--;
    *held = NULL;
    pthread_mutex_unlock(&m->mu);
}

void api_models_stats_get(api_models *m, api_models_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&m->mu);
    out->loads = m->loads;
    vcache_stats_get(m->vc, &out->vec_cache);
    for (api_model_slot *s = m->slots; s; s = s->next)
        out->n += !s->loading;
    out->models = xcalloc(out->n ? out->n : 1, sizeof *out->models);
    size_t i = 0;
    for (api_model_slot *s = m->slots; s; s = s->next) {
        if (s->loading)
            continue;   /* open once loaded */
        out->models[i].path = xstrdup(s->path);
        out->models[i].kind = apim_kind_names[s->kind];
        out->models[i].users = s->users;
        i++;
    }
    pthread_mutex_unlock(&m->mu);
}

void api_models_stats_free(api_models_stats *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->models[i].path);
    free(s->models);
    memset(s, 0, sizeof *s);
}
