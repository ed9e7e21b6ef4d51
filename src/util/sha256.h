/* sha256 — SHA-256 (FIPS 180-4), for verifying downloaded model files.
 *
 * Streaming: sha256_init(), any number of sha256_update(), sha256_final().
 * The context is a plain struct owned by the caller; nothing is allocated.
 * sha256_file() hashes a whole file and writes the lowercase hex digest. */
#ifndef TROVE_SHA256_H
#define TROVE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define SHA256_HEX_LEN 64

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t bytes;       /* message length so far */
    uint8_t block[64];
    size_t fill;          /* bytes waiting in block */
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t digest[32]);

/* Lowercase hex of a digest into hex[SHA256_HEX_LEN + 1]. */
void sha256_hex(const uint8_t digest[32], char hex[SHA256_HEX_LEN + 1]);

/* Hash the file at path; hex receives the lowercase digest. Errors name the
 * path (TROVE_EIO). */
trove_err sha256_file(const char *path, char hex[SHA256_HEX_LEN + 1]);

#endif
