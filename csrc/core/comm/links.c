/* links.c -- lookups in the link table (see links.h; the rows are in
 * link_table.c). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "links.h"

static const char *const kind_names[MFU_LINK_KIND_COUNT] = {
    [MFU_LINK_NVLINK] = "nvlink",
    [MFU_LINK_XGMI] = "xgmi",
    [MFU_LINK_PCIE] = "pcie",
    [MFU_LINK_INFINIBAND] = "infiniband",
    [MFU_LINK_ROCE] = "roce",
};

const char *mfu_link_kind_name(mfu_link_kind kind)
{
    return (unsigned)kind < MFU_LINK_KIND_COUNT ? kind_names[kind] : NULL;
}

mfu_status mfu_link_intra(const char *device_name, const mfu_link **out)
{
    const mfu_link *row;
    if (device_name == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; mfu_link_get(i, &row) == MFU_OK; i++) {
        if (row->scope == MFU_LINK_INTRA && strcmp(row->name, device_name) == 0) {
            *out = row;
            return MFU_OK;
        }
    }
    return MFU_ERR_NOT_FOUND;
}

/* `text` equals `word` ignoring case and surrounding blanks. */
static int same_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    while (isspace((unsigned char)*text))
        text++;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)text[i]) != word[i])
            return 0;
    text += n;
    while (isspace((unsigned char)*text))
        text++;
    return *text == '\0';
}

mfu_status mfu_link_inter(const char *link_layer, double rate_gbps, const mfu_link **out)
{
    mfu_link_kind kind;
    const mfu_link *row;
    if (link_layer == NULL || !isfinite(rate_gbps) || !(rate_gbps > 0.0))
        return MFU_ERR_INVALID_ARGUMENT;
    if (same_word(link_layer, "infiniband"))
        kind = MFU_LINK_INFINIBAND;
    else if (same_word(link_layer, "ethernet"))
        kind = MFU_LINK_ROCE;
    else
        return MFU_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; mfu_link_get(i, &row) == MFU_OK; i++) {
        if (row->scope == MFU_LINK_INTER && row->kind == kind
            && fabs(row->rate_gbps - rate_gbps) <= 1e-3 * row->rate_gbps) {
            *out = row;
            return MFU_OK;
        }
    }
    return MFU_ERR_NOT_FOUND;
}

mfu_status mfu_link_parse_rate(const char *text, size_t size, double *rate_gbps)
{
    char buffer[64];
    size_t n = 0, i = 0;
    char *end;
    double value;
    if (text == NULL)
        return MFU_ERR_INVALID_ARGUMENT;
    while (i < size && text[i] != '\0' && isspace((unsigned char)text[i]))
        i++;
    /* The number, copied so that strtod never reads past `size`. */
    while (i < size && n < sizeof buffer - 1 && text[i] != '\0'
           && (isdigit((unsigned char)text[i]) || text[i] == '.'))
        buffer[n++] = text[i++];
    buffer[n] = '\0';
    if (n == 0)
        return MFU_ERR_INVALID_ARGUMENT;
    value = strtod(buffer, &end);
    if (*end != '\0' || !isfinite(value) || !(value > 0.0))
        return MFU_ERR_INVALID_ARGUMENT;
    while (i < size && text[i] == ' ')
        i++;
    if (size - i < 6 || memcmp(text + i, "Gb/sec", 6) != 0)
        return MFU_ERR_INVALID_ARGUMENT;
    *rate_gbps = value;
    return MFU_OK;
}

double mfu_link_share(double bytes_per_sec, int ports, int ranks)
{
    if (!isfinite(bytes_per_sec) || !(bytes_per_sec > 0.0) || ports < 1 || ranks < 1)
        return NAN;
    return bytes_per_sec * (double)ports / (double)ranks;
}
