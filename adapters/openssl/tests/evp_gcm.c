/*
 * evp_gcm.c: AES-GCM through the EVP API only, the isola provider against
 * the default provider (tests/openssl_provider.rs compiles and runs it).
 *
 *   evp_gcm PROVIDER_DIR [SEED]
 *
 * Loads the providers `isola` (from PROVIDER_DIR) and `default`, then for
 * the GCM spec's test cases 1-4 (AES-128) and 13-16 (AES-256) and for
 * random inputs, encrypts and decrypts with `provider=isola` and with
 * `provider=default`, in several call sequences (one update, several
 * updates, AAD in pieces, a reused context, a copied context, a 16-byte
 * IV, a short tag), and checks that both give the same ciphertext, tag and
 * plaintext, the vectors' expected values, and that a wrong tag fails the
 * final. Prints one line per failure and a summary; exits 0 when all agree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

/* A message and what to do with it. */
typedef struct message {
    const char *name;
    size_t key_len;
    unsigned char key[32];
    size_t iv_len;
    unsigned char iv[16];
    const unsigned char *aad;
    size_t aad_len;
    const unsigned char *pt;
    size_t pt_len;
    size_t tag_len; /* 16, or shorter */
} message;

/* How the calls are cut: the data in `pieces` updates, the AAD in `aad_pieces`. */
typedef struct shape {
    const char *name;
    int pieces;
    int aad_pieces;
    int reuse; /* encrypt a throwaway message first, then this one on the same context */
    int copy;  /* copy the context after the AAD and finish on the copy */
} shape;

static int failures;
static int checks;

/* Records a failed check. */
static void fail(const char *what, const message *m, const shape *s, const char *provider)
{
    failures++;
    printf("FAIL %s: %s, %s, provider %s\n", what, m->name, s->name, provider);
    ERR_print_errors_fp(stdout);
}

/* Feeds `len` bytes to update in `pieces` roughly equal pieces. */
static int feed(EVP_CIPHER_CTX *ctx, unsigned char *out, const unsigned char *in, size_t len, int pieces,
                size_t *written)
{
    size_t done = 0;
    int i, n;

    *written = 0;
    for (i = 0; i < pieces; i++) {
        size_t part = (i == pieces - 1) ? len - done : len / (size_t)pieces;

        if (part == 0 && i != pieces - 1)
            continue;
        if (!EVP_CipherUpdate(ctx, out == NULL ? NULL : out + *written, &n, in + done, (int)part))
            return 0;
        if (out != NULL)
            *written += (size_t)n;
        done += part;
    }
    return 1;
}

/* Starts a message on ctx (fetched once per call) with key and IV. */
static int start(EVP_CIPHER_CTX *ctx, const EVP_CIPHER *cipher, const message *m, int enc)
{
    OSSL_PARAM p[2] = { OSSL_PARAM_construct_size_t(OSSL_CIPHER_PARAM_AEAD_IVLEN, (size_t *)&m->iv_len),
                        OSSL_PARAM_construct_end() };

    if (!EVP_CipherInit_ex2(ctx, cipher, NULL, NULL, enc, NULL))
        return 0;
    if (m->iv_len != 12 && !EVP_CIPHER_CTX_set_params(ctx, p))
        return 0;
    return EVP_CipherInit_ex2(ctx, NULL, m->key, NULL, enc, NULL)
           && EVP_CipherInit_ex2(ctx, NULL, NULL, m->iv, enc, NULL);
}

/*
 * One direction of one message with `propq`: encrypt (tag out) or decrypt
 * (tag in; returns whether the final accepted it). out gets the data.
 */
static int run(const char *propq, const message *m, const shape *s, int enc, const unsigned char *in,
               unsigned char *out, unsigned char *tag, int *final_ok)
{
    EVP_CIPHER *cipher = EVP_CIPHER_fetch(NULL, m->key_len == 16 ? "AES-128-GCM" : "AES-256-GCM", propq);
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new(), *work = ctx, *copy = NULL;
    size_t written = 0;
    int n = 0, ok = 0;

    if (cipher == NULL || ctx == NULL)
        goto end;
    if (s->reuse) { /* a first message on the context, then this one */
        unsigned char junk[64], jt[16];

        if (!start(ctx, cipher, m, 1) || !EVP_CipherUpdate(ctx, junk, &n, (const unsigned char *)"0123456789", 10)
            || !EVP_CipherFinal_ex(ctx, junk, &n) || !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, jt))
            goto end;
    }
    if (s->reuse ? !EVP_CipherInit_ex2(ctx, NULL, NULL, m->iv, enc, NULL) : !start(ctx, cipher, m, enc))
        goto end;
    if (!enc && !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, (int)m->tag_len, tag))
        goto end;
    if (m->aad_len > 0 && !feed(ctx, NULL, m->aad, m->aad_len, s->aad_pieces, &written))
        goto end;
    if (s->copy) {
        if ((copy = EVP_CIPHER_CTX_new()) == NULL || !EVP_CIPHER_CTX_copy(copy, ctx))
            goto end;
        work = copy;
    }
    if (m->pt_len > 0 && !feed(work, out, in, m->pt_len, s->pieces, &written))
        goto end;
    if (written != m->pt_len)
        goto end;
    *final_ok = EVP_CipherFinal_ex(work, out + written, &n);
    ERR_clear_error();
    if (enc && (!*final_ok || n != 0 || !EVP_CIPHER_CTX_ctrl(work, EVP_CTRL_GCM_GET_TAG, (int)m->tag_len, tag)))
        goto end;
    ok = 1;
end:
    EVP_CIPHER_CTX_free(copy);
    EVP_CIPHER_CTX_free(ctx);
    EVP_CIPHER_free(cipher);
    return ok;
}

/* Every check of one message in one shape; expected ciphertext and tag if known. */
static void check(const message *m, const shape *s, const unsigned char *want_ct, const unsigned char *want_tag)
{
    size_t cap = m->pt_len + 16;
    unsigned char *ct_i = calloc(1, cap), *ct_d = calloc(1, cap), *pt_i = calloc(1, cap), *pt_d = calloc(1, cap);
    unsigned char tag_i[16] = { 0 }, tag_d[16] = { 0 }, bad[16];
    int ok_i = 0, ok_d = 0;

    checks++;
    if (ct_i == NULL || ct_d == NULL || pt_i == NULL || pt_d == NULL) {
        fail("out of memory", m, s, "-");
        goto end;
    }
    if (!run("provider=isola", m, s, 1, m->pt, ct_i, tag_i, &ok_i))
        fail("encrypt", m, s, "isola");
    if (!run("provider=default", m, s, 1, m->pt, ct_d, tag_d, &ok_d))
        fail("encrypt", m, s, "default");
    if (memcmp(ct_i, ct_d, m->pt_len) != 0 || memcmp(tag_i, tag_d, m->tag_len) != 0)
        fail("ciphertext or tag differs from the default provider's", m, s, "isola");
    if (want_ct != NULL && (memcmp(ct_d, want_ct, m->pt_len) != 0 || memcmp(tag_d, want_tag, 16) != 0))
        fail("ciphertext or tag differs from the test vector", m, s, "default");
    if (want_ct != NULL && (memcmp(ct_i, want_ct, m->pt_len) != 0 || memcmp(tag_i, want_tag, m->tag_len) != 0))
        fail("ciphertext or tag differs from the test vector", m, s, "isola");
    if (!run("provider=isola", m, s, 0, ct_d, pt_i, tag_d, &ok_i) || !ok_i || memcmp(pt_i, m->pt, m->pt_len) != 0)
        fail("decrypt", m, s, "isola");
    memcpy(bad, tag_d, sizeof(bad));
    bad[m->tag_len - 1] ^= 1;
    if (!run("provider=isola", m, s, 0, ct_d, pt_i, bad, &ok_i) || ok_i)
        fail("a wrong tag was accepted", m, s, "isola");
    if (!run("provider=default", m, s, 0, ct_d, pt_d, bad, &ok_d) || ok_d)
        fail("a wrong tag was accepted", m, s, "default");
end:
    free(ct_i);
    free(ct_d);
    free(pt_i);
    free(pt_d);
}

/* Hex to bytes (at most cap); the length. */
static size_t unhex(const char *hex, unsigned char *out, size_t cap)
{
    size_t n = 0;
    unsigned int byte;

    while (hex[0] != '\0' && hex[1] != '\0' && n < cap && sscanf(hex, "%2x", &byte) == 1) {
        out[n++] = (unsigned char)byte;
        hex += 2;
    }
    return n;
}

/* A test case of the GCM specification (McGrew and Viega), 96-bit IV. */
typedef struct vector {
    const char *name, *key, *iv, *aad, *pt, *ct, *tag;
} vector;

#define P3 "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
#define K3 "feffe9928665731c6d6a8f9467308308"
static const vector vectors[] = {
    { "TC1", "00000000000000000000000000000000", "000000000000000000000000", "", "", "",
      "58e2fccefa7e3061367f1d57a4e7455a" },
    { "TC2", "00000000000000000000000000000000", "000000000000000000000000", "",
      "00000000000000000000000000000000", "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf" },
    { "TC3", K3, "cafebabefacedbaddecaf888", "", P3 "1aafd255",
      "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
      "4d5c2af327cd64a62cf35abd2ba6fab4" },
    { "TC4", K3, "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2", P3,
      "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
      "5bc94fbc3221a5db94fae95ae7121a47" },
    { "TC13", "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "", "",
      "", "530f8afbc74536b9a963b4f1c4cb738b" },
    { "TC14", "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000", "",
      "00000000000000000000000000000000", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919" },
    { "TC15", K3 K3, "cafebabefacedbaddecaf888", "", P3 "1aafd255",
      "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
      "b094dac5d93471bdec1a502270e3cc6c" },
    { "TC16", K3 K3, "cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2", P3,
      "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
      "76fc6ece0f4e1768cddf8853bb2d551b" },
};

static const shape shapes[] = {
    { "one update", 1, 1, 0, 0 },
    { "two updates", 2, 1, 0, 0 },
    { "three updates, AAD in two", 3, 2, 0, 0 },
    { "reused context: a new IV only", 1, 1, 1, 0 },
    { "copied context", 1, 1, 0, 1 },
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* A small deterministic generator (xorshift64*). */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned char rng_byte(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned char)((rng_state * 0x2545f4914f6cdd1dULL) >> 56);
}

/* The test vectors in every shape. */
static void check_vectors(void)
{
    static unsigned char aad[64], pt[64], ct[64], tag[16];
    size_t v, s;

    for (v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
        message m = { vectors[v].name, 0, { 0 }, 12, { 0 }, aad, 0, pt, 0, 16 };

        m.key_len = unhex(vectors[v].key, m.key, sizeof(m.key));
        unhex(vectors[v].iv, m.iv, sizeof(m.iv));
        m.aad_len = unhex(vectors[v].aad, aad, sizeof(aad));
        m.pt_len = unhex(vectors[v].pt, pt, sizeof(pt));
        unhex(vectors[v].ct, ct, sizeof(ct));
        unhex(vectors[v].tag, tag, sizeof(tag));
        for (s = 0; s < N_SHAPES; s++)
            check(&m, &shapes[s], ct, tag);
    }
}

/* Random messages of many sizes, both key sizes, every shape; a 16-byte IV
 * and a 12-byte tag now and then. */
static void check_random(void)
{
    static const size_t sizes[] = { 0, 1, 15, 16, 17, 255, 1000, 4096, 8191, 8192, 8193, 16384, 65539, 1 << 20 };
    static const size_t aad_sizes[] = { 0, 1, 13, 20, 300 };
    size_t i, s, k;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (k = 0; k < 2; k++) {
            size_t aad_len = aad_sizes[(i + k) % 5];
            unsigned char *pt = malloc(sizes[i] + 1), *aad = malloc(aad_len + 1);
            message m = { "random", k == 0 ? 16 : 32, { 0 }, (i % 5 == 4) ? 16 : 12, { 0 }, aad, aad_len,
                          pt, sizes[i], (i % 4 == 3) ? 12 : 16 };
            size_t j;
            char name[64];

            if (pt == NULL || aad == NULL) {
                failures++;
                free(pt);
                free(aad);
                continue;
            }
            snprintf(name, sizeof(name), "random %zu B, AAD %zu, key %zu, IV %zu, tag %zu", sizes[i], aad_len,
                     m.key_len, m.iv_len, m.tag_len);
            m.name = name;
            for (j = 0; j < sizeof(m.key); j++)
                m.key[j] = rng_byte();
            for (j = 0; j < sizeof(m.iv); j++)
                m.iv[j] = rng_byte();
            for (j = 0; j < aad_len; j++)
                aad[j] = rng_byte();
            for (j = 0; j < sizes[i]; j++)
                pt[j] = rng_byte();
            for (s = 0; s < N_SHAPES; s++)
                check(&m, &shapes[s], NULL, NULL);
            free(pt);
            free(aad);
        }
    }
}

/* Prints the provider's counters (OSSL_PROVIDER_get_params). */
static void print_counters(const OSSL_PROVIDER *isola)
{
    uint64_t offloaded = 0, fallbacks = 0;
    char stats[2048] = "";
    OSSL_PARAM params[] = {
        OSSL_PARAM_uint64("isola-offloaded", &offloaded),
        OSSL_PARAM_uint64("isola-fallbacks", &fallbacks),
        OSSL_PARAM_utf8_string("isola-stats", stats, sizeof(stats)),
        OSSL_PARAM_END,
    };

    if (!OSSL_PROVIDER_get_params(isola, params)) {
        failures++;
        printf("FAIL OSSL_PROVIDER_get_params\n");
        return;
    }
    printf("isola-offloaded %llu\nisola-fallbacks %llu\nisola-stats %s\n", (unsigned long long)offloaded,
           (unsigned long long)fallbacks, stats);
}

/* Loads the providers and runs every check. */
int main(int argc, char **argv)
{
    OSSL_PROVIDER *isola, *deflt;

    if (argc < 2) {
        fprintf(stderr, "usage: %s PROVIDER_DIR [SEED]\n", argv[0]);
        return 2;
    }
    if (argc > 2)
        rng_state ^= strtoull(argv[2], NULL, 0);
    if (!OSSL_PROVIDER_set_default_search_path(NULL, argv[1]) || (isola = OSSL_PROVIDER_load(NULL, "isola")) == NULL
        || (deflt = OSSL_PROVIDER_load(NULL, "default")) == NULL) {
        ERR_print_errors_fp(stdout);
        printf("FAIL cannot load the providers from %s\n", argv[1]);
        return 1;
    }
    check_vectors();
    check_random();
    print_counters(isola);
    printf("%d checks, %d failures\n", checks, failures);
    OSSL_PROVIDER_unload(isola);
    OSSL_PROVIDER_unload(deflt);
    return failures == 0 ? 0 : 1;
}
