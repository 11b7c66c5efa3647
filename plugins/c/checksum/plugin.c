/* `checksum`: CRC-32, FNV-1a and SHA-256 of a text, and checking a digest. */
#include "toolhost.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static uint32_t crc32(const unsigned char *data, size_t len) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        for (int bit = 0; bit < 8; bit++) crc = crc >> 1 ^ (0xEDB88320u & -(crc & 1));
    }
    return ~crc;
}

static uint64_t fnv1a(const unsigned char *data, size_t len) {
    uint64_t hash = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++) hash = (hash ^ data[i]) * 0x100000001b3u;
    return hash;
}

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) ((x) >> (n) | (x) << (32 - (n)))

static void sha256_block(uint32_t h[8], const unsigned char block[64]) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)block[4 * i] << 24 | block[4 * i + 1] << 16 | block[4 * i + 2] << 8 | block[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (ROTR(v[4], 6) ^ ROTR(v[4], 11) ^ ROTR(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
        uint32_t t2 = (ROTR(v[0], 2) ^ ROTR(v[0], 13) ^ ROTR(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) h[i] += v[i];
}

static void sha256(const unsigned char *data, size_t len, char hex[65]) {
    uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    unsigned char tail[128] = { 0 };
    size_t full = len / 64 * 64, rest = len - full;
    for (size_t i = 0; i < full; i += 64) sha256_block(h, data + i);
    memcpy(tail, data + full, rest);
    tail[rest] = 0x80;
    size_t blocks = rest < 56 ? 1 : 2;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++) tail[blocks * 64 - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (size_t i = 0; i < blocks; i++) sha256_block(h, tail + 64 * i);
    for (int i = 0; i < 8; i++) sprintf(hex + 8 * i, "%08x", h[i]);
}

/* The digest of the `text` argument under the `algorithm` one (sha256 if
 * absent) in hex, its length in `len`; NULL, the result set to the error,
 * for an unknown algorithm. */
static const char *digest(const th_args *args, th_result *result, size_t *len, char hex[65]) {
    const char *algorithm = th_string(args, "algorithm", NULL);
    const unsigned char *bytes = (const unsigned char *)th_string(args, "text", len);
    if (!algorithm) algorithm = "sha256";
    if (strcmp(algorithm, "sha256") == 0) sha256(bytes, *len, hex);
    else if (strcmp(algorithm, "crc32") == 0) sprintf(hex, "%08x", crc32(bytes, *len));
    else if (strcmp(algorithm, "fnv1a") == 0) sprintf(hex, "%016llx", (unsigned long long)fnv1a(bytes, *len));
    else {
        th_invalid_args(result, "unknown algorithm `%s`: use sha256, crc32 or fnv1a", algorithm);
        return NULL;
    }
    return algorithm;
}

static const th_param hash_params[] = {
    { "text", TH_STRING, "the text to hash, as UTF-8", TH_REQUIRED },
    { "algorithm", TH_STRING, "sha256 (default), crc32 or fnv1a", TH_OPTIONAL },
};

static void hash_text(const th_args *args, th_result *result) {
    size_t len;
    char hex[65];
    const char *algorithm = digest(args, result, &len, hex);
    if (algorithm) th_json(result, "{\"algorithm\":\"%s\",\"hex\":\"%s\",\"bytes\":%zu}", algorithm, hex, len);
}

static const th_param verify_params[] = {
    { "text", TH_STRING, "the text to check", TH_REQUIRED },
    { "expected", TH_STRING, "the digest it should have, in hex (any case)", TH_REQUIRED },
    { "algorithm", TH_STRING, "sha256 (default), crc32 or fnv1a", TH_OPTIONAL },
};

static void verify_digest(const th_args *args, th_result *result) {
    size_t len;
    char hex[65];
    const char *expected = th_string(args, "expected", NULL);
    if (digest(args, result, &len, hex))
        th_json(result, "{\"matches\":%s,\"actual\":\"%s\"}", strcasecmp(hex, expected) == 0 ? "true" : "false", hex);
}

static const char *const tags[] = { "hash", NULL };

static const th_tool tools[] = {
    { .name = "hash_text", .description = "The SHA-256, CRC-32 or FNV-1a digest of a text, in hex.",
      .params = hash_params, .param_count = 2, .run = hash_text, .agent_callable = true, .tags = tags,
      .example = "{\"text\": \"hello\", \"algorithm\": \"crc32\"}" },
    { .name = "verify_digest", .description = "Check a text against a digest it should have.",
      .params = verify_params, .param_count = 3, .run = verify_digest, .agent_callable = true, .tags = tags },
};

TOOLHOST_PLUGIN("checksum", "0.1.0", "Checksums and hashes of text", tools);
