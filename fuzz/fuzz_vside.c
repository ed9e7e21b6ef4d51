/* Fuzz target: the header of a vector sidecar file (store/store_vside.h).
 *
 * Input byte 0 picks the mode. Even: the rest is parsed as a header as read
 * from a file (any length). Odd: a header is built from the next bytes
 * (segment id, width, count, identity), then pairs of (offset, xor) bytes
 * change it before it is parsed, so that mutations reach past the
 * checksum. Checks: nothing reads out of bounds; a header built from fields
 * in range and left unchanged parses back to the same fields (with or
 * without sketches, version 2; version 1 files parse too); whatever
 * parses is built again byte for byte; a parsed header's payload size is the
 * one a segment of its width and count takes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "store/store_vec.h"
#include "store/store_vside.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parsed(const uint8_t *raw, const vside_header *h)
{
    if (h->payload_len != store_vec_seg_size(h->n, (int)h->dim) || h->dim == 0 ||
        h->dim > VEC_MAX_DIM || h->n > STORE_VEC_SEG_MAX || h->seg_id <= 0 ||
        strlen(h->index_id) == 0)
        abort();
    uint8_t again[VSIDE_HEADER];
    vside_header_build(h, again);
    if (memcmp(again, raw, VSIDE_HEADER) != 0)
        abort();
}

static void from_fields(const uint8_t *d, size_t size)
{
    if (size < 12)
        return;
    vside_header h = {0};
    uint64_t id = 0;
    for (int i = 0; i < 8; i++)
        id = id << 8 | d[i];
    h.seg_id = (int64_t)(id >> 1);
    h.sketch = id & 1 ? VEC_SKETCH_VERSION : 0;   /* version 2 carries sketches or not */
    h.dim = (uint32_t)(d[8] | d[9] << 8) % (VEC_MAX_DIM + 2);
    h.n = (uint32_t)(d[10] | d[11] << 8);
    h.elem = VSIDE_ELEM_INT8;
    d += 12, size -= 12;
    size_t id_len = 0;
    while (id_len < 32 && id_len < size && d[id_len] >= 0x21 && d[id_len] <= 0x7e)
        h.index_id[id_len] = (char)d[id_len], id_len++;
    d += id_len, size -= id_len;
    if (h.dim >= 1 && h.dim <= VEC_MAX_DIM)
        h.payload_len = store_vec_seg_size(h.n, (int)h.dim);
    uint8_t raw[VSIDE_HEADER];
    vside_header_build(&h, raw);
    int changed = 0;
    for (size_t i = 0; i + 1 < size; i += 2) {
        raw[d[i] % VSIDE_HEADER] ^= d[i + 1];
        changed |= d[i + 1] != 0;
    }
    vside_header got;
    int ok = vside_header_parse(raw, sizeof raw, &got);
    int in_range = h.seg_id > 0 && id_len > 0 && h.dim >= 1 && h.dim <= VEC_MAX_DIM &&
                   h.n <= STORE_VEC_SEG_MAX;
    if (!changed && ok != in_range)
        abort();
    if (ok && !changed && (got.seg_id != h.seg_id || got.dim != h.dim || got.n != h.n ||
                           got.sketch != h.sketch || vside_sketch_len(&got) != (h.sketch ?
                           vec_sketch_size(h.n, (int)h.dim) : 0) ||
                           strcmp(got.index_id, h.index_id) != 0))
        abort();
    if (ok)
        check_parsed(raw, &got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1) {
        from_fields(data + 1, size - 1);
        return 0;
    }
    /* a copy of exactly the bytes given: ASan sees any read past them */
    uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
    if (!copy)
        return 0;
    memcpy(copy, data + 1, size - 1);
    vside_header h;
    if (vside_header_parse(copy, size - 1, &h))
        check_parsed(copy, &h);
    free(copy);
    return 0;
}
