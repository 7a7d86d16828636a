/*
 * fuzz_comm.c -- communication (comm.h, links.h) and the step engine's
 * collectives (steps.h, "Communication"): every entry point that reads
 * outside input -- a sysfs port rate, device and link-layer names, a Work's
 * op-type name, a collective's launch as the observer describes it.
 *
 * Input: mode u8, then per mode:
 *   0  text (the rest): mfu_link_parse_rate over every prefix length
 *      0 .. len; then mfu_link_inter("InfiniBand" / "Ethernet", rate)
 *   1  layer u8 (0 InfiniBand, 1 Ethernet, 2 the text), rate double, text:
 *      mfu_link_intra(text), mfu_link_inter(layer, rate)
 *   2  text: mfu_comm_kind_from_name, mfu_comm_op_type_kind,
 *      mfu_comm_op_find, mfu_comm_kind_phase / mfu_comm_phase_kind
 *   3  kind i32, group size i64: mfu_comm_busbw_factor; three doubles: the
 *      ratios (busbw, net utilization, overlap); a link share
 *   4  window u8 (1 .. 8), warm-up u8 % 4, then up to 64 ops (u8): push a
 *      fuzzed record, summarize, enable late; the engine on the CPU clock:
 *      boundaries, comm begin with a fuzzed launch, end / end_at with a
 *      fuzzed or a real token, phases, exclusions, sums
 *
 * Properties:
 *  - statuses only as documented; outputs untouched on failure;
 *  - a parsed rate is finite > 0, the same for any longer prefix that still
 *    holds the unit; a network row found is within 0.1% of the rate;
 *  - an intra row found has the name asked; names round-trip; a kind's
 *    phase maps back to it;
 *  - bus factors in [0, 2] for valid input; ratios NaN or finite, busbw and
 *    net utilization >= 0, overlap <= 1;
 *  - the engine: begin refuses exactly bad kinds, bytes, bus bytes and
 *    links; the window's sums are >= 0 (never NaN: a completion timed
 *    before its launch is no duration); unpaired never decreases; no
 *    crash, no leak.
 */
#include <math.h>

#include "comm.h"
#include "fuzz_input.h"
#include "links.h"
#include "steps.h"

static void check_rate(const char *text, size_t len)
{
    double rate = -1.0, again = -1.0;
    mfu_status st = MFU_OK, prev = MFU_ERR_INVALID_ARGUMENT;
    for (size_t n = 0; n <= len; n++) {
        double r = -1.0;
        st = mfu_link_parse_rate(text, n, &r);
        FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
        if (st == MFU_OK) {
            FUZZ_CHECK(isfinite(r) && r > 0.0);
            if (prev == MFU_OK)
                FUZZ_CHECK(r == rate); /* more text after the unit changes nothing */
            rate = r;
        } else {
            FUZZ_CHECK(r == -1.0);
        }
        prev = st;
    }
    if (st == MFU_OK) {
        FUZZ_CHECK(mfu_link_parse_rate(text, len, &again) == MFU_OK && again == rate);
        for (int layer = 0; layer < 2; layer++) {
            const mfu_link *row = NULL;
            mfu_status found = mfu_link_inter(layer ? "Ethernet" : "InfiniBand", rate, &row);
            FUZZ_CHECK(found == MFU_OK || found == MFU_ERR_NOT_FOUND);
            if (found == MFU_OK)
                FUZZ_CHECK(fabs(row->rate_gbps - rate) <= 1e-3 * row->rate_gbps);
        }
    }
}

static void check_names(fuzz_input *in)
{
    uint8_t layer = fi_u8(in);
    double rate = fi_double(in, 400.0, 1.0);
    size_t len;
    char *text = fi_rest_cstr(in, &len);
    const mfu_link *row = NULL;
    mfu_status st = mfu_link_intra(text, &row);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND);
    if (st == MFU_OK)
        FUZZ_CHECK(strcmp(row->name, text) == 0 && row->scope == MFU_LINK_INTRA);
    row = NULL;
    st = mfu_link_inter(layer % 3 == 0 ? "InfiniBand" : layer % 3 == 1 ? "Ethernet" : text,
                        rate, &row);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND || st == MFU_ERR_INVALID_ARGUMENT);
    FUZZ_CHECK((st == MFU_OK) == (row != NULL));
    if (!(isfinite(rate) && rate > 0.0))
        FUZZ_CHECK(st == MFU_ERR_INVALID_ARGUMENT);
    free(text);
}

static void check_kinds(fuzz_input *in)
{
    size_t len;
    char *text = fi_rest_cstr(in, &len);
    mfu_comm_kind kind = MFU_COMM_KIND_COUNT, back = MFU_COMM_KIND_COUNT;
    const mfu_comm_op *op;
    mfu_status st = mfu_comm_kind_from_name(text, &kind);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
    if (st == MFU_OK) {
        FUZZ_CHECK(strcmp(mfu_comm_kind_name(kind), text) == 0);
        FUZZ_CHECK(mfu_comm_phase_kind(mfu_comm_kind_phase(kind), &back) == MFU_OK && back == kind);
    }
    st = mfu_comm_op_type_kind(text, &kind);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND);
    FUZZ_CHECK(st != MFU_OK || (unsigned)kind < MFU_COMM_KIND_COUNT);
    op = mfu_comm_op_find(text);
    FUZZ_CHECK(op == NULL || strcmp(op->name, text) == 0);
    free(text);
}

static void check_ratios(fuzz_input *in)
{
    int32_t kind = fi_i32(in);
    int64_t n = fi_i64(in);
    double a = fi_double(in, 1e9, 1e6), b = fi_double(in, 1e-3, 1e-6), f = -1.0, r;
    mfu_status st = mfu_comm_busbw_factor((mfu_comm_kind)kind, n, &f);
    FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_NOT_FOUND || st == MFU_ERR_INVALID_ARGUMENT);
    if (st == MFU_OK)
        FUZZ_CHECK(f >= 0.0 && f <= 2.0); /* 2 (n - 1) / n rounds to 2 for huge n */
    else
        FUZZ_CHECK(f == -1.0);
    FUZZ_CHECK((st == MFU_ERR_INVALID_ARGUMENT) == (kind < 0 || kind >= MFU_COMM_KIND_COUNT || n < 1));
    r = mfu_comm_busbw_gbs(a, b);
    FUZZ_CHECK(isnan(r) || (isfinite(r) && r >= 0.0) || isinf(r));
    r = mfu_comm_net_utilization(a, b);
    FUZZ_CHECK(isnan(r) || r >= 0.0);
    r = mfu_comm_overlap(a, b);
    FUZZ_CHECK(isnan(r) || r <= 1.0);
    r = mfu_link_share(a, (int)(n % 64), kind % 64);
    FUZZ_CHECK(isnan(r) || r >= 0.0); /* a denormal share underflows to 0 */
}

/* The engine on the CPU clock under a fuzzed sequence of operations. */
static void check_engine(fuzz_input *in)
{
    mfu_steps_config c;
    mfu_steps *s = NULL;
    mfu_step_report none = {.given = 0};
    mfu_step_outcome outcome;
    uint64_t last_token = 0, unpaired = 0;
    memset(&c, 0, sizeof c);
    c.timer.clock = MFU_CLOCK_CPU;
    c.window = 1u + fi_u8(in) % 8u;
    c.warmup = fi_u8(in) % 4u;
    c.per_step.model_flops = 1e9;
    c.per_step.executed_flops = NAN;
    c.per_step.param_bytes = NAN;
    c.peak.flops_per_sec = 1e12;
    c.peak.bytes_per_sec = NAN;
    c.peak.num_devices = 1;
    FUZZ_CHECK(mfu_steps_create(&c, &s, NULL) == MFU_OK);
    for (int op = 0; op < 64 && fi_left(in) > 0; op++) {
        uint8_t code = fi_u8(in);
        mfu_comm_launch l;
        uint64_t token = 0;
        mfu_status st;
        switch (code % 8) {
        case 0: FUZZ_CHECK(mfu_steps_comm_enable(s) == MFU_OK); break;
        case 1: FUZZ_CHECK(mfu_steps_step(s, &none, &outcome) == MFU_OK); break;
        case 2:
        case 3:
            memset(&l, 0, sizeof l);
            l.kind = (mfu_comm_kind)(fi_u8(in) % (MFU_COMM_KIND_COUNT + 1));
            l.bytes = fi_double(in, 4096.0, 1.0);
            l.bus_bytes = fi_double(in, 2048.0, 1.0);
            l.link_bytes_per_sec = fi_double(in, 1e9, 1e6);
            l.host = code & 8;
            st = mfu_steps_comm_begin(s, &l, &token);
            FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
            if (st == MFU_ERR_INVALID_ARGUMENT)
                FUZZ_CHECK(l.kind == MFU_COMM_KIND_COUNT || !(isfinite(l.bytes) && l.bytes >= 0.0)
                           || !(isnan(l.bus_bytes) || (isfinite(l.bus_bytes) && l.bus_bytes >= 0.0))
                           || !(isnan(l.link_bytes_per_sec)
                                || (isfinite(l.link_bytes_per_sec) && l.link_bytes_per_sec >= 0.0)));
            if (token != 0)
                last_token = token;
            break;
        case 4: FUZZ_CHECK(mfu_steps_comm_end(s, code & 16 ? fi_u64(in) : last_token, 0) == MFU_OK); break;
        case 5: {
            uint64_t now = 0;
            FUZZ_CHECK(mfu_clock_monotonic_ns(&now) == MFU_OK);
            FUZZ_CHECK(mfu_steps_comm_end_at(s, last_token, code & 16 ? fi_u64(in) : now) == MFU_OK);
            break;
        }
        case 6:
            st = (code & 16) ? mfu_steps_phase_begin(s, (mfu_phase)(fi_u8(in) % MFU_PHASE_COUNT))
                             : mfu_steps_phase_end(s);
            FUZZ_CHECK(st == MFU_OK || st == MFU_ERR_INVALID_ARGUMENT);
            break;
        default:
            FUZZ_CHECK(((code & 16) ? mfu_steps_exclude_begin(s) : mfu_steps_exclude_end(s)) == MFU_OK);
        }
        FUZZ_CHECK(mfu_steps_comm_unpaired(s) >= unpaired);
        unpaired = mfu_steps_comm_unpaired(s);
    }
    {
        mfu_comm_times sum;
        uint32_t steps = 0;
        mfu_steps_comm(s, &steps, &sum);
        FUZZ_CHECK(steps <= c.window);
        for (int k = 0; k < MFU_COMM_KIND_COUNT; k++)
            FUZZ_CHECK(sum.calls[k] >= 0.0 && sum.bytes[k] >= 0.0 && sum.duration_s[k] >= 0.0);
        FUZZ_CHECK(sum.link_capacity_bytes >= 0.0 && sum.link_bus_bytes >= 0.0);
    }
    mfu_steps_destroy(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = fi_make(data, size);
    uint8_t mode = fi_u8(&in);
    switch (mode % 5) {
    case 0: {
        size_t len;
        char *text = fi_rest_cstr(&in, &len);
        check_rate(text, len);
        free(text);
        break;
    }
    case 1: check_names(&in); break;
    case 2: check_kinds(&in); break;
    case 3: check_ratios(&in); break;
    default: check_engine(&in); break;
    }
    return 0;
}
