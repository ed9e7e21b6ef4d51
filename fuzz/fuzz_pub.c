/* Fuzz the parser of what an OpenSearch server answers to `_bulk`
 * (publish/pub.h) and the Retry-After header value (fetch/fetch.h): both
 * come from the network. */
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
    long s = fetch_parse_retry_after((const char *)data, size);
    if (s < -1)
        abort();
    return 0;
}
