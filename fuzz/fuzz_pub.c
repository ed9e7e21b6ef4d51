/* Fuzz the parsers of what an OpenSearch server answers (publish/pub.h):
 * `_bulk`, `GET _mapping` (the index's _meta) and `_search`, and the
 * Retry-After header value (fetch/fetch.h): all come from the network. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fetch/fetch.h"
#include "publish/pub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pub_bulk_resp r;
    if (pub_bulk_response_parse((const char *)data, size, &r) == TROVE_OK) {
        for (size_t i = 0; i < r.n; i++)
            if (r.items[i].status < 100 || r.items[i].status > 599 || !r.items[i].id)
                abort();
        pub_bulk_resp_free(&r);
    } else if (r.n || r.items) {
        abort();
    }
    pub_meta m;
    if (pub_meta_parse((const char *)data, size, &m) == TROVE_OK) {
        if (m.is_trove && (!m.index_id || !m.fingerprint || !m.model))
            abort();
        pub_meta_free(&m);
    }
    pub_hit *hits;
    size_t n;
    if (pub_search_parse((const char *)data, size, &hits, &n) == TROVE_OK) {
        for (size_t i = 0; i < n; i++)
            if (!hits[i].docid || !hits[i].path || !hits[i].text || hits[i].line_start < 0)
                abort();
        pub_hits_free(hits, n);
    } else if (hits || n) {
        abort();
    }
    long s = fetch_parse_retry_after((const char *)data, size);
    if (s < -1)
        abort();
    return 0;
}
