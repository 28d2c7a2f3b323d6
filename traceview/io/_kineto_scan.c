/* The optional compiled fast path of traceview/io/decode.py: one chunk of a trace's event
 * array ("[{...}, {...}]") into per-event columns, with no Python object per event.
 *
 * Why: on a real 450 MB torch.compile trace (1.7 M events) msgspec's typed decode plus
 * one Python pass per column took ~2.1 of the run's ~4.7 CPU seconds; no well-kept
 * library builds these columns faster (pyarrow.json 3.6 s, polars 2.9 s, duckdb 3.7 s:
 * docs/json-decoder.md). This scanner is deliberately narrow: it accepts only what it can
 * decode exactly as the msgspec path would (ASCII text, ts/dur with at most three
 * decimals and no exponent, dur below 2**43 us and ts below 2**62 ns, integer or string pid/tid, string ph/cat/name,
 * no duplicate keys, no surrogate escapes) and returns BAIL for anything else, so the caller decodes that chunk
 * the msgspec way and the output is the same by construction (tests compare the two).
 *
 * Per event it writes: a chunk-local code of the key (ph, cat, pid, tid) and of the name,
 * ts and dur in integer ns (MISSING when absent), and the byte spans of the event and of
 * its args value. The distinct keys and names of the chunk are returned as byte spans, in
 * order of first sight; the caller decodes those few and maps them to its global codes.
 *
 * Built by setup.py (setuptools Extension); loaded with ctypes by traceview/native.py.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BAIL (-1)
#define FULL (-2)
#define NOMEM (-3)
#define MISSING INT64_MIN
/* 2**43 us: decode.EXACT_FLOAT_LIMIT_US. Below it, the float split of a number with at
 * most three decimals is its exact decimal value (decode.py's docstring). */
#define LIMIT_US 8796093022208LL
/* 2**62 // 1000 us: exact_time.text_to_ns reads no ts at or past it (MISSING) */
#define TS_LIMIT_US 4611686018427387LL

typedef const uint8_t *P;

static inline P ws(P p, P e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

#if defined(_MSC_VER)
#include <intrin.h>
static inline int ctz64(uint64_t v) { unsigned long i; _BitScanForward64(&i, v); return (int)i; }
#else
#define ctz64(v) __builtin_ctzll(v)
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define FIRST_STOP(m) 0 /* the word's first byte is its highest: step byte by byte */
#else
#define FIRST_STOP(m) (ctz64(m) >> 3)
#endif

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* The high bit of each byte of v that needs a look in a string: '"', '\\', a control
 * character or non-ASCII. The lowest bit set is exact (a borrow only flags bytes above
 * a true match), so the count of trailing zeros finds the first such byte. */
static inline uint64_t str_stops(uint64_t v) {
    uint64_t q = v ^ (ONES * '"'), b = v ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((v - ONES * 0x20) & ~v) | v) & HIGHS;
}

/* A JSON string starting at p ('"'); returns the byte after its closing quote or NULL.
 * *esc is set when it holds an escape. Control characters and non-ASCII bail. Plain
 * characters are skipped eight at a time: most of a trace's bytes are in strings
 * (Python frame names, file paths), and a byte at a time was most of the scan. */
static P str(P p, P e, int *esc) {
    p++;
    while (p < e) {
        while (e - p >= 8) {
            uint64_t v, m;
            memcpy(&v, p, 8);
            m = str_stops(v);
            if (m) { p += FIRST_STOP(m); break; }
            p += 8;
        }
        if (p >= e) break;
        uint8_t c = *p;
        if (c == '"') return p + 1;
        if (c < 0x20 || c >= 0x80) return NULL;
        if (c == '\\') {
            *esc = 1;
            if (p + 1 >= e) return NULL;
            c = p[1];
            if (c == 'u') {
                if (p + 6 > e) return NULL;
                unsigned u = 0;
                for (int k = 2; k < 6; k++) {
                    uint8_t h = p[k];
                    unsigned d;
                    if (h >= '0' && h <= '9') d = h - '0';
                    else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
                    else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
                    else return NULL;
                    u = u * 16 + d;
                }
                /* a surrogate: msgspec rejects unpaired ones; decline them all */
                if (u >= 0xD800 && u <= 0xDFFF) return NULL;
                p += 6;
                continue;
            }
            if (!(c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' ||
                  c == 'r' || c == 't'))
                return NULL;
            p += 2;
            continue;
        }
        p++;
    }
    return NULL;
}

/* A JSON number at p; returns its end or NULL, with its parts (locals in the loops:
 * stores through the pointers on every digit cost a fifth of the scan). */
static inline P num(P p, P e, int *neg, int64_t *ip, int *idigits, int64_t *fp, int *fdigits,
                    int *expo) {
    int sign = 0, nd = 0, fd = 0, ex = 0;
    int64_t iv = 0, fv = 0;
    if (p < e && *p == '-') { sign = 1; p++; }
    if (p >= e) return NULL;
    if (*p == '0') { p++; nd = 1; }
    else if (*p >= '1' && *p <= '9') {
        while (p < e && (unsigned)(*p - '0') < 10) {
            if (nd < 18) iv = iv * 10 + (*p - '0');
            nd++;
            p++;
        }
    } else return NULL;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || (unsigned)(*p - '0') >= 10) return NULL;
        while (p < e && (unsigned)(*p - '0') < 10) {
            if (fd < 18) fv = fv * 10 + (*p - '0');
            fd++;
            p++;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        ex = 1;
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || (unsigned)(*p - '0') >= 10) return NULL;
        while (p < e && (unsigned)(*p - '0') < 10) p++;
    }
    *neg = sign; *ip = iv; *idigits = nd; *fp = fv; *fdigits = fd; *expo = ex;
    return p;
}

static P value(P p, P e, int depth);

/* Skips any JSON value, checking it as strictly as a parser would. */
static P value(P p, P e, int depth) {
    if (p >= e || depth > 64) return NULL;
    int esc = 0, neg, idg, fdg, ex;
    int64_t ip, fp;
    switch (*p) {
    case '"':
        return str(p, e, &esc);
    case '{':
        p = ws(p + 1, e);
        if (p < e && *p == '}') return p + 1;
        for (;;) {
            if (p >= e || *p != '"') return NULL;
            p = str(p, e, &esc);
            if (!p) return NULL;
            p = ws(p, e);
            if (p >= e || *p != ':') return NULL;
            p = value(ws(p + 1, e), e, depth + 1);
            if (!p) return NULL;
            p = ws(p, e);
            if (p < e && *p == ',') { p = ws(p + 1, e); continue; }
            if (p < e && *p == '}') return p + 1;
            return NULL;
        }
    case '[':
        p = ws(p + 1, e);
        if (p < e && *p == ']') return p + 1;
        for (;;) {
            p = value(p, e, depth + 1);
            if (!p) return NULL;
            p = ws(p, e);
            if (p < e && *p == ',') { p = ws(p + 1, e); continue; }
            if (p < e && *p == ']') return p + 1;
            return NULL;
        }
    case 't':
        return (e - p >= 4 && memcmp(p, "true", 4) == 0) ? p + 4 : NULL;
    case 'f':
        return (e - p >= 5 && memcmp(p, "false", 5) == 0) ? p + 5 : NULL;
    case 'n':
        return (e - p >= 4 && memcmp(p, "null", 4) == 0) ? p + 4 : NULL;
    default:
        return num(p, e, &neg, &ip, &idg, &fp, &fdg, &ex);
    }
}

/* A time value in us as exact ns; NULL (bail) unless at most 3 decimals, no exponent,
 * and below `limit` us: LIMIT_US - 1 for dur, which the reference always reads as a float
 * (at 2**43 - 0.001 the float rounds up to 2**43); TS_LIMIT_US for ts, which the
 * reference reads from its text, exactly, in a chunk holding a ts past 2**43 us (the
 * clocks of real traces: Kineto's epoch-microsecond timestamps), so that the exact value
 * ip * 1000 + fp is what it gives. */
static P time_ns(P p, P e, int64_t *out, int64_t limit) {
    int neg, idg, fdg, ex;
    int64_t ip, fp;
    P q = num(p, e, &neg, &ip, &idg, &fp, &fdg, &ex);
    if (!q || ex || fdg > 3 || idg > 16 || ip >= limit) return NULL;
    for (int k = fdg; k < 3; k++) fp *= 10;
    int64_t v = ip * 1000 + fp;
    *out = neg ? -v : v;
    return q;
}

/* An int | str field (pid, tid, id): a string, or an integer that fits int64. */
static P int_or_str(P p, P e) {
    int esc = 0, neg, idg, fdg, ex;
    int64_t ip, fp;
    if (p < e && *p == '"') return str(p, e, &esc);
    P q = num(p, e, &neg, &ip, &idg, &fp, &fdg, &ex);
    if (!q || fdg || ex || idg > 18) return NULL;
    return q;
}

/* Eight bytes a step (a byte at a time was a tenth of the scan); any hash will do, the
 * table compares the bytes on a hash match. */
static inline uint64_t hash_bytes(uint64_t h, P p, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        h = (h ^ v) * 0x9E3779B97F4A7C15ULL;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

enum { K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ID, K_BP, K_ARGS, K_OTHER };

static int key_of(P s, int64_t n) {
    /* s: the key's characters, without quotes; escaped keys are K_OTHER here and bail
     * in the caller (msgspec matches field names after unescaping). */
    switch (n) {
    case 2:
        if (s[0] == 'p' && s[1] == 'h') return K_PH;
        if (s[0] == 't' && s[1] == 's') return K_TS;
        if (s[0] == 'i' && s[1] == 'd') return K_ID;
        if (s[0] == 'b' && s[1] == 'p') return K_BP;
        return K_OTHER;
    case 3:
        if (memcmp(s, "cat", 3) == 0) return K_CAT;
        if (memcmp(s, "pid", 3) == 0) return K_PID;
        if (memcmp(s, "tid", 3) == 0) return K_TID;
        if (memcmp(s, "dur", 3) == 0) return K_DUR;
        return K_OTHER;
    case 4:
        if (memcmp(s, "name", 4) == 0) return K_NAME;
        if (memcmp(s, "args", 4) == 0) return K_ARGS;
        return K_OTHER;
    default:
        return K_OTHER;
    }
}

typedef struct {
    int32_t *slot;   /* open addressing: local code + 1, 0 = empty */
    uint64_t mask;
    uint64_t *hash;  /* per local code, for growing */
    int64_t *span;   /* per local code: `width` int64 (start, end pairs) */
    int width;
    int32_t count;
    int64_t cap;
} Table;

/* Starts small and doubles: a chunk has a few thousand distinct keys and names, and a
 * table sized for every possible event would be page-faulted in all over. */
static int table_init(Table *t, int64_t *span, int width, int64_t cap) {
    t->mask = 4095;
    t->slot = calloc(t->mask + 1, sizeof(int32_t));
    t->hash = malloc(sizeof(uint64_t) * 2048);
    t->span = span;
    t->width = width;
    t->count = 0;
    t->cap = cap;
    return t->slot && t->hash;
}

static int table_grow(Table *t) {
    uint64_t size = (t->mask + 1) * 2;
    int32_t *slot = calloc(size, sizeof(int32_t));
    uint64_t *hash = realloc(t->hash, sizeof(uint64_t) * (size / 2));
    if (!slot || !hash) { free(slot); if (hash) t->hash = hash; return 0; }
    t->hash = hash;
    for (int32_t c = 0; c < t->count; c++) {
        uint64_t i = hash[c] & (size - 1);
        while (slot[i]) i = (i + 1) & (size - 1);
        slot[i] = c + 1;
    }
    free(t->slot);
    t->slot = slot;
    t->mask = size - 1;
    return 1;
}

/* The local code of the tuple of spans sp[0..width) (start, end pairs; start -1 for an
 * absent field), adding it on first sight; -1: full, -3: out of memory. */
static int32_t intern(Table *t, P base, const int64_t *sp, uint64_t h) {
    uint64_t i = h & t->mask;
    for (;;) {
        int32_t s = t->slot[i];
        if (s == 0) break;
        if (t->hash[s - 1] == h) {
            const int64_t *o = t->span + (int64_t)(s - 1) * t->width;
            int same = 1;
            for (int k = 0; k < t->width && same; k += 2) {
                int64_t n1 = sp[k + 1] - sp[k], n2 = o[k + 1] - o[k];
                if (sp[k] < 0 || o[k] < 0) same = (sp[k] < 0) == (o[k] < 0);
                else same = n1 == n2 && memcmp(base + sp[k], base + o[k], (size_t)n1) == 0;
            }
            if (same) return s - 1;
        }
        i = (i + 1) & t->mask;
    }
    if (t->count >= t->cap) return -1;
    if ((uint64_t)t->count * 2 >= t->mask + 1) {
        if (!table_grow(t)) return -3;
        i = h & t->mask;
        while (t->slot[i]) i = (i + 1) & t->mask;
    }
    int32_t code = t->count++;
    memcpy(t->span + (int64_t)code * t->width, sp, sizeof(int64_t) * t->width);
    t->hash[code] = h;
    t->slot[i] = code + 1;
    return code;
}

/* Scans one chunk. Returns the number of events, or BAIL (decode this chunk the msgspec
 * way), FULL (more than `cap` events or `ucap` distinct keys or names: call again with
 * room) or NOMEM.
 * Outputs per event (cap each): key, name (local codes), ts, dur (ns or MISSING),
 * ev (start, end: 2*cap), args (start, end or -1, -1: 2*cap). Tables: key_spans
 * (8*ucap: ph, cat, pid, tid token spans; ph/cat/pid/tid tokens include quotes),
 * name_spans (2*ucap, the name token with its quotes), n_out[0] = keys, n_out[1] = names. */
int64_t tv_scan_chunk(const uint8_t *buf, int64_t len, int64_t cap, int64_t ucap,
                      int32_t *key, int32_t *name, int64_t *ts, int64_t *dur,
                      int64_t *ev, int64_t *args, int64_t *key_spans, int64_t *name_spans,
                      int32_t *n_out) {
    P base = buf, e = buf + len, p = ws(buf, e);
    Table kt, nt;
    int64_t n = 0, rc = BAIL;
    int ok = table_init(&kt, key_spans, 8, ucap);
    ok = table_init(&nt, name_spans, 2, ucap) && ok;
    if (!ok) { rc = NOMEM; goto done; }
    if (p >= e || *p != '[') goto done;
    p = ws(p + 1, e);
    if (p < e && *p == ']') { p = ws(p + 1, e); rc = p == e ? 0 : BAIL; goto done; }
    for (;;) {
        if (p >= e || *p != '{') goto done;
        if (n >= cap) { rc = FULL; goto done; }
        int64_t sp[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, nm[2] = {-1, -1};
        int64_t t_ns = MISSING, d_ns = MISSING, a0 = -1, a1 = -1;
        int seen = 0;
        ev[2 * n] = p - base;
        p = ws(p + 1, e);
        if (p < e && *p == '}') { p++; goto event_done; }
        for (;;) {
            int esc = 0;
            if (p >= e || *p != '"') goto done;
            P ks = p;
            p = str(p, e, &esc);
            if (!p || esc) goto done;
            int k = key_of(ks + 1, (p - 1) - (ks + 1));
            p = ws(p, e);
            if (p >= e || *p != ':') goto done;
            p = ws(p + 1, e);
            P vs = p;
            if (k != K_OTHER) {
                if (seen & (1 << k)) goto done; /* a duplicate key */
                seen |= 1 << k;
            }
            switch (k) {
            case K_PH: case K_CAT: case K_NAME: case K_BP:
                if (p >= e || *p != '"') goto done;
                p = str(p, e, &esc);
                if (!p) goto done;
                if (k == K_PH) { sp[0] = vs - base; sp[1] = p - base; }
                else if (k == K_CAT) { sp[2] = vs - base; sp[3] = p - base; }
                else if (k == K_NAME) { nm[0] = vs - base; nm[1] = p - base; }
                break;
            case K_PID: case K_TID:
                p = int_or_str(p, e);
                if (!p) goto done;
                if (k == K_PID) { sp[4] = vs - base; sp[5] = p - base; }
                else { sp[6] = vs - base; sp[7] = p - base; }
                break;
            case K_ID:
                if (e - p >= 4 && memcmp(p, "null", 4) == 0) p += 4;
                else p = int_or_str(p, e);
                if (!p) goto done;
                break;
            case K_TS:
                p = time_ns(p, e, &t_ns, TS_LIMIT_US);
                if (!p) goto done;
                break;
            case K_DUR:
                p = time_ns(p, e, &d_ns, LIMIT_US - 1);
                if (!p) goto done;
                break;
            case K_ARGS:
                p = value(p, e, 1);
                if (!p) goto done;
                a0 = vs - base; a1 = p - base;
                break;
            default:
                p = value(p, e, 1);
                if (!p) goto done;
            }
            p = ws(p, e);
            if (p < e && *p == ',') { p = ws(p + 1, e); continue; }
            if (p < e && *p == '}') { p++; break; }
            goto done;
        }
    event_done:
        ev[2 * n + 1] = p - base;
        {
            uint64_t h = 1469598103934665603ULL;
            for (int k = 0; k < 8; k += 2) {
                h = sp[k] < 0 ? (h ^ 0xffu) * 1099511628211ULL
                              : hash_bytes(h, base + sp[k], sp[k + 1] - sp[k]);
                h = (h ^ 0x1fu) * 1099511628211ULL;
            }
            int32_t c = intern(&kt, base, sp, h);
            if (c < 0) { rc = c == -1 ? FULL : NOMEM; goto done; }
            key[n] = c;
            uint64_t hn = nm[0] < 0 ? 7 : hash_bytes(1469598103934665603ULL, base + nm[0],
                                                     nm[1] - nm[0]);
            c = intern(&nt, base, nm, hn);
            if (c < 0) { rc = c == -1 ? FULL : NOMEM; goto done; }
            name[n] = c;
        }
        ts[n] = t_ns;
        dur[n] = d_ns;
        args[2 * n] = a0;
        args[2 * n + 1] = a1;
        n++;
        p = ws(p, e);
        if (p < e && *p == ',') { p = ws(p + 1, e); continue; }
        if (p < e && *p == ']') { p = ws(p + 1, e); rc = p == e ? n : BAIL; goto done; }
        goto done;
    }
done:
    n_out[0] = kt.count;
    n_out[1] = nt.count;
    free(kt.slot);
    free(kt.hash);
    free(nt.slot);
    free(nt.hash);
    return rc;
}

/* What native.py checks before it calls tv_scan_chunk: the ABI version (bump it with any
 * change of tv_scan_chunk's arguments or meaning, together with native.py's table) and the
 * sha256 of the source this library was built from (setup.py defines it), compared with
 * the .c file beside the library, so a library left from an older source is refused. */
#ifndef TV_SOURCE_SHA256
#define TV_SOURCE_SHA256 "unknown"
#endif
int64_t tv_abi_version(void) { return 1; }
const char *tv_source_sha256(void) { return TV_SOURCE_SHA256; }
