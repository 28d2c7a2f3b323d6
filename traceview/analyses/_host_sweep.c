/* The optional compiled host sweep of traceview/analyses/host.py: the loop sweep
 * (attribute_host(general=True), the reference) as one pass in C.
 *
 * Why: a numpy array sweep that stood in for the Python loop took ~50 array passes over
 * the rows (1.1-1.3 CPU s and its row-sized temporaries on a real 450 MB torch.compile
 * trace, the largest stage once decoding was compiled: CHANGELOG.md, issue #15; it was
 * deleted in issue #23). The loop itself is O(rows) with a stack; in C it takes
 * milliseconds (0.19 s on that trace, docs/performance.md). Same algorithm, line for line,
 * as the Python loop in host.py, so its answers are the reference's by construction; the
 * tests compare the two (tests/test_sweep.py).
 *
 * Inputs: rows (the thread's slice rows in sweep order: start, then longest first; int32,
 * as the caller holds them: an int64 copy of a cold compile's rows was the peak), the
 * trace's start and end columns (indexed by row; clipped to [w0, w1) here, so no clipped
 * copies of them are made), own (category code per position, -1 inherit), subtree (0: its
 * own rule only, 1: sticks to its subtree, 2: sticks where no enclosing rule does).
 * Outputs: the bounds (segments + 1 times; the segments are contiguous from w0 to w1), as
 * int64 in bounds, or, where off is not NULL, packed as intervals.py's PackedTimes holds
 * them (base: the first bound of each block of 1 << PACK_SHIFT, off: each bound less its
 * block's base, at most PACK_MAX; a bound further from its base returns -4 and the caller
 * sweeps again into int64 bounds): a cold compile's tens of millions of int64 bounds were
 * a quarter of explain's peak memory,
 * seg_cat (may be NULL: each segment's category is its owner's resolved one, or untraced,
 * and host.py reads it so), seg_pos (row position, -1 untraced), resolved (per position),
 * *non_nested. Each
 * position's owned ns are not summed here: a row-sized int64 column of them, alive beside
 * the segments, was the peak of a cold compile's sweep; they follow from the segments
 * (host.py: HostTimeline.self_ns, and hot_functions sums them per function).
 * Codes are int8 (the caller checks that every category code fits). The stack of open
 * slices is allocated here and grows as needed: it is as deep as the nesting, far less
 * than n, so preallocating n entries reserved memory the sweep never used. Returns the
 * number of segments, -2 if more than seg_cap (cannot happen with 2n + 1), -3 when the
 * stack cannot grow (out of memory), -4 when a packed bound does not fit.
 *
 * Built by setup.py (setuptools Extension); loaded with ctypes by traceview/native.py.
 */
#include <stdint.h>
#include <stdlib.h>

/* as intervals.py's PACK_SHIFT and PACK_MAX */
#define PACK_SHIFT 12
#define PACK_MAX 4294967294LL

typedef struct {
    int64_t end;
    int32_t pos;
    int8_t res;
    int8_t forced;
} open_slice;

int64_t tv_host_sweep(int64_t n, const int32_t *rows, const int64_t *start_col,
                      const int64_t *end_col, const int8_t *own, const uint8_t *subtree,
                      int64_t w0, int64_t w1, int32_t untraced, int32_t other, int64_t *bounds,
                      int64_t *base, uint32_t *off, int8_t *seg_cat, int32_t *seg_pos, int64_t seg_cap, int8_t *resolved,
                      int64_t *non_nested) {
    int64_t cap = 256;
    open_slice *stack = malloc((size_t)cap * sizeof(open_slice));
    if (stack == NULL) return -3;
    int64_t top = 0; /* stack size */
    int64_t segs = 0;
    int64_t t = w0;
    int64_t nn = 0;
#define PUT(k, v)                                                   \
    do {                                                            \
        int64_t k_ = (k), v_ = (v);                                 \
        if (off == NULL) {                                          \
            bounds[k_] = v_;                                        \
        } else {                                                    \
            int64_t b_ = k_ >> PACK_SHIFT;                          \
            if ((k_ & ((1 << PACK_SHIFT) - 1)) == 0) base[b_] = v_; \
            int64_t d_ = v_ - base[b_];                             \
            if (d_ < 0 || d_ > PACK_MAX) {                          \
                free(stack);                                        \
                return -4;                                          \
            }                                                       \
            off[k_] = (uint32_t)d_;                                 \
        }                                                           \
    } while (0)
#define EMIT(s, e, c, o)                          \
    do {                                          \
        if (segs >= seg_cap) {                    \
            free(stack);                          \
            return -2;                            \
        }                                         \
        PUT(segs, (s));                           \
        PUT(segs + 1, (e));                       \
        if (seg_cat != NULL) seg_cat[segs] = (int8_t)(c); \
        seg_pos[segs] = (o);                      \
        segs++;                                   \
    } while (0)
    for (int64_t pos = 0; pos < n; pos++) {
        int64_t row = rows[pos];
        int64_t st = start_col[row] > w0 ? start_col[row] : w0;
        int64_t en = end_col[row] < w1 ? end_col[row] : w1;
        /* the time up to this start belongs to the open slice that started last */
        while (t < st) {
            while (top > 0 && stack[top - 1].end <= t) top--;
            if (top == 0) {
                EMIT(t, st, untraced, -1);
                t = st;
                break;
            }
            int64_t end = st < stack[top - 1].end ? st : stack[top - 1].end;
            EMIT(t, end, stack[top - 1].res, stack[top - 1].pos);
            t = end;
        }
        while (top > 0 && stack[top - 1].end <= st) top--;
        int32_t forced, res, oc = own[pos];
        int has_parent = top > 0;
        if (has_parent) {
            forced = stack[top - 1].forced;
            if (en > stack[top - 1].end) nn++;
        } else {
            forced = -1;
        }
        /* 1: sticks to its subtree; 2: sticks only where no enclosing rule does */
        if (subtree[pos] == 1 || (subtree[pos] == 2 && forced == -1)) {
            forced = res = oc;
        } else if (forced != -1) {
            res = forced;
        } else if (oc == -1) {
            res = has_parent ? stack[top - 1].res : other;
        } else {
            res = oc;
        }
        resolved[pos] = (int8_t)res;
        if (top == cap) {
            open_slice *grown = realloc(stack, (size_t)(2 * cap) * sizeof(open_slice));
            if (grown == NULL) {
                free(stack);
                return -3;
            }
            stack = grown;
            cap *= 2;
        }
        stack[top].end = en;
        stack[top].pos = (int32_t)pos;
        stack[top].res = (int8_t)res;
        stack[top].forced = (int8_t)forced;
        top++;
    }
    while (t < w1) { /* the tail of the window */
        while (top > 0 && stack[top - 1].end <= t) top--;
        if (top == 0) {
            EMIT(t, w1, untraced, -1);
            break;
        }
        int64_t end = w1 < stack[top - 1].end ? w1 : stack[top - 1].end;
        EMIT(t, end, stack[top - 1].res, stack[top - 1].pos);
        t = end;
    }
    free(stack);
    *non_nested = nn;
    return segs;
#undef EMIT
#undef PUT
}

/* The compiled twin of traceview/model.py's clip_to_callers: Python frames in start
 * order (longest first), each clipped to the end of the innermost open frame (whose end
 * is already clipped). Same loop as the Python reference, line for line
 * (tests/test_explain_pure.py compares both). The frames are read where they lie: rows
 * (int32) index the start and end columns, and each clipped end is rewritten in end_col
 * in place, so no gathered copies of the frames' starts and ends
 * are made (on a cold compile's tens of millions of frames they were the load's peak).
 * Each clipped frame's row and by how much go to hit_rows and hit_by (the caller's
 * buffers of n entries, written from the start). Returns the number clipped. */
int64_t tv_clip_rows(int64_t n, const int32_t *rows, const int64_t *start_col,
                     int64_t *end_col, int64_t *stack, int32_t *hit_rows, int64_t *hit_by) {
    int64_t top = 0, clipped = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t row = rows[i];
        int64_t a = start_col[row];
        int64_t e = end_col[row];
        while (top > 0 && stack[top - 1] <= a) top--;
        if (top > 0 && e > stack[top - 1]) {
            hit_rows[clipped] = (int32_t)row;
            hit_by[clipped] = e - stack[top - 1];
            clipped++;
            e = stack[top - 1];
            end_col[row] = e;
        }
        stack[top++] = e;
    }
    return clipped;
}

/* What native.py checks before it calls tv_host_sweep: the ABI version (bump it with any
 * change of tv_host_sweep's arguments or meaning, together with native.py's table) and the
 * sha256 of the source this library was built from (setup.py defines it), compared with
 * the .c file beside the library, so a library left from an older source is refused. */
#ifndef TV_SOURCE_SHA256
#define TV_SOURCE_SHA256 "unknown"
#endif
int64_t tv_abi_version(void) { return 4; }
const char *tv_source_sha256(void) { return TV_SOURCE_SHA256; }
