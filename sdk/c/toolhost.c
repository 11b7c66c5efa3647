/*
 * The component's exports for a plugin declared with toolhost.h: the
 * manifest built from `toolhost_plugin`, and `invoke` dispatching to a
 * tool's `run` with a small reader for the arguments' JSON object.
 *
 * The canonical ABI frees what the exports return (post-return), so every
 * string and list handed back is malloc'd, never static.
 */
#include "toolhost.h"
#include "plugin.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const th_plugin toolhost_plugin;

struct th_args {
    const char *json;
    const char *end;
};

struct th_result {
    bool set;
    bool ok;
    uint8_t tag;
    char *text;
    size_t len;
};

/* ---- the arguments' JSON ------------------------------------------------ */

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* p at an opening quote: just past the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end) {
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

/* Just past the value at p, or NULL. */
static const char *skip_value(const char *p, const char *end) {
    if (p >= end) return NULL;
    if (*p == '"') return skip_string(p, end);
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < end) {
            if (*p == '"') {
                if (!(p = skip_string(p, end))) return NULL;
                continue;
            }
            if (*p == '{' || *p == '[') depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
            p++;
        }
        return NULL;
    }
    while (p < end && !strchr(",}] \t\r\n", *p)) p++; /* a number or a literal */
    return p;
}

static unsigned hex4(const char *p) {
    unsigned value = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        value = value * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return value;
}

static size_t put_utf8(char *out, unsigned code) {
    if (code < 0x80) { out[0] = (char)code; return 1; }
    if (code < 0x800) { out[0] = (char)(0xC0 | code >> 6); out[1] = (char)(0x80 | (code & 0x3F)); return 2; }
    if (code < 0x10000) {
        out[0] = (char)(0xE0 | code >> 12); out[1] = (char)(0x80 | (code >> 6 & 0x3F));
        out[2] = (char)(0x80 | (code & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | code >> 18); out[1] = (char)(0x80 | (code >> 12 & 0x3F));
    out[2] = (char)(0x80 | (code >> 6 & 0x3F)); out[3] = (char)(0x80 | (code & 0x3F)); return 4;
}

/* The string literal [p, stop) (quotes included) decoded, NUL-terminated. */
static char *decode_string(const char *p, const char *stop, size_t *len) {
    char *out = malloc((size_t)(stop - p) + 1), *o = out;
    for (p++, stop--; p < stop; p++) {
        if (*p != '\\') { *o++ = *p; continue; }
        switch (*++p) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            if (stop - p < 5) { free(out); return NULL; }
            unsigned code = hex4(p + 1);
            p += 4;
            if (code >= 0xD800 && code < 0xDC00 && stop - p >= 7 && p[1] == '\\' && p[2] == 'u') {
                code = 0x10000 + ((code - 0xD800) << 10) + (hex4(p + 3) - 0xDC00);
                p += 6;
            }
            o += put_utf8(o, code);
            break;
        }
        default: *o++ = *p; /* \" \\ \/ */
        }
    }
    *o = '\0';
    if (len) *len = (size_t)(o - out);
    return out;
}

/* The value of `key` in the arguments' object, as [*start, *stop). */
static bool find(const th_args *args, const char *key, const char **start, const char **stop) {
    const char *p = skip_ws(args->json, args->end), *end = args->end;
    if (p >= end || *p++ != '{') return false;
    for (;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"') return false;
        const char *name = p;
        if (!(p = skip_string(p, end))) return false;
        size_t len;
        char *decoded = decode_string(name, p, &len);
        bool match = decoded && len == strlen(key) && memcmp(decoded, key, len) == 0;
        free(decoded);
        p = skip_ws(p, end);
        if (p >= end || *p++ != ':') return false;
        const char *value = skip_ws(p, end);
        if (!(p = skip_value(value, end))) return false;
        if (match) {
            *start = value;
            *stop = p;
            return true;
        }
        p = skip_ws(p, end);
        if (p >= end || *p++ != ',') return false;
    }
}

static char *dup_n(const char *s, size_t len) {
    char *out = malloc(len + 1);
    memcpy(out, s, len);
    out[len] = '\0';
    return out;
}

const char *th_string(const th_args *args, const char *key, size_t *len) {
    const char *start, *stop;
    if (!find(args, key, &start, &stop) || *start != '"') return NULL;
    return decode_string(start, stop, len);
}

bool th_integer(const th_args *args, const char *key, int64_t *out) {
    const char *start, *stop;
    if (!find(args, key, &start, &stop)) return false;
    char *text = dup_n(start, (size_t)(stop - start)), *rest;
    errno = 0;
    long long value = strtoll(text, &rest, 10);
    bool ok = rest != text && *rest == '\0' && errno == 0;
    free(text);
    if (ok) *out = value;
    return ok;
}

bool th_number(const th_args *args, const char *key, double *out) {
    const char *start, *stop;
    if (!find(args, key, &start, &stop) || *start == '"') return false;
    char *text = dup_n(start, (size_t)(stop - start)), *rest;
    double value = strtod(text, &rest);
    bool ok = rest != text && *rest == '\0';
    free(text);
    if (ok) *out = value;
    return ok;
}

bool th_boolean(const th_args *args, const char *key, bool *out) {
    const char *start, *stop;
    if (!find(args, key, &start, &stop)) return false;
    size_t len = (size_t)(stop - start);
    if (len == 4 && memcmp(start, "true", 4) == 0) *out = true;
    else if (len == 5 && memcmp(start, "false", 5) == 0) *out = false;
    else return false;
    return true;
}

const char *th_json_arg(const th_args *args, const char *key) {
    const char *start, *stop;
    return find(args, key, &start, &stop) ? dup_n(start, (size_t)(stop - start)) : NULL;
}

char *th_quote(const char *s, size_t len) {
    char *out = malloc(len * 6 + 3), *o = out; /* \u00XX is the longest escape */
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { *o++ = '\\'; *o++ = (char)c; }
        else if (c < 0x20) o += sprintf(o, "\\u%04x", c);
        else *o++ = (char)c;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

/* ---- results ------------------------------------------------------------ */

static void set(th_result *result, bool ok, uint8_t tag, const char *format, va_list args) {
    va_list again;
    va_copy(again, args);
    int len = vsnprintf(NULL, 0, format, args);
    char *text = malloc((size_t)len + 1);
    vsnprintf(text, (size_t)len + 1, format, again);
    va_end(again);
    free(result->text);
    *result = (th_result){ .set = true, .ok = ok, .tag = tag, .text = text, .len = (size_t)len };
}

#define SETTER(NAME, OK, TAG)                                   \
    void NAME(th_result *result, const char *format, ...) {     \
        va_list args;                                           \
        va_start(args, format);                                 \
        set(result, OK, TAG, format, args);                     \
        va_end(args);                                           \
    }
SETTER(th_text, true, TOOLHOST_PLUGIN_TYPES_OUTPUT_TEXT)
SETTER(th_json, true, TOOLHOST_PLUGIN_TYPES_OUTPUT_JSON)
SETTER(th_invalid_args, false, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_INVALID_ARGS)
SETTER(th_failed, false, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_FAILED)

/* ---- the exports -------------------------------------------------------- */

static void string(plugin_string_t *out, const char *s) {
    plugin_string_dup(out, s ? s : "");
}

static void strings(plugin_list_string_t *out, const char *const *list) {
    size_t n = 0;
    while (list && list[n]) n++;
    out->len = n;
    out->ptr = calloc(n ? n : 1, sizeof *out->ptr);
    for (size_t i = 0; i < n; i++) string(&out->ptr[i], list[i]);
}

static const uint8_t PARAM_TYPES[] = {
    [TH_STRING] = TOOLHOST_PLUGIN_TYPES_PARAM_TYPE_STRING,
    [TH_INTEGER] = TOOLHOST_PLUGIN_TYPES_PARAM_TYPE_INTEGER,
    [TH_NUMBER] = TOOLHOST_PLUGIN_TYPES_PARAM_TYPE_NUMBER,
    [TH_BOOLEAN] = TOOLHOST_PLUGIN_TYPES_PARAM_TYPE_BOOLEAN,
    [TH_JSON] = TOOLHOST_PLUGIN_TYPES_PARAM_TYPE_JSON,
};
static const uint8_t PERMISSIONS[] = {
    [TH_PUBLIC] = TOOLHOST_PLUGIN_TYPES_PERMISSION_PUBLIC,
    [TH_MODERATE] = TOOLHOST_PLUGIN_TYPES_PERMISSION_MODERATE,
    [TH_SENSITIVE] = TOOLHOST_PLUGIN_TYPES_PERMISSION_SENSITIVE,
};
static const uint8_t ACCESS[] = {
    [TH_READ] = TOOLHOST_PLUGIN_TYPES_DIR_ACCESS_READ,
    [TH_READ_WRITE] = TOOLHOST_PLUGIN_TYPES_DIR_ACCESS_READ_WRITE,
};

static void tool(toolhost_plugin_types_tool_t *out, const th_tool *tool) {
    string(&out->name, tool->name);
    string(&out->description, tool->description);
    out->params.len = tool->param_count;
    out->params.ptr = calloc(tool->param_count ? tool->param_count : 1, sizeof *out->params.ptr);
    for (size_t i = 0; i < tool->param_count; i++) {
        const th_param *param = &tool->params[i];
        string(&out->params.ptr[i].name, param->name);
        out->params.ptr[i].type = PARAM_TYPES[param->type];
        string(&out->params.ptr[i].description, param->description);
        out->params.ptr[i].required = param->required;
    }
    out->permission = PERMISSIONS[tool->permission];
    out->result_approval = tool->result_approval;
    out->agent_callable = tool->agent_callable;
    out->distributed_exposed = tool->distributed_exposed;
    strings(&out->tags, tool->tags);
    out->example.is_some = tool->example != NULL;
    if (tool->example) string(&out->example.val, tool->example);
}

void exports_plugin_manifest(plugin_manifest_t *ret) {
    const th_plugin *p = &toolhost_plugin;
    memset(ret, 0, sizeof *ret);
    string(&ret->name, p->name);
    string(&ret->version, p->version);
    string(&ret->description, p->description);
    string(&ret->api_version, TH_API_VERSION);
    ret->tools.len = p->tool_count;
    ret->tools.ptr = calloc(p->tool_count ? p->tool_count : 1, sizeof *ret->tools.ptr);
    for (size_t i = 0; i < p->tool_count; i++) tool(&ret->tools.ptr[i], &p->tools[i]);
    size_t dirs = 0;
    while (p->directories && p->directories[dirs].guest_path) dirs++;
    ret->capabilities.directories.len = dirs;
    ret->capabilities.directories.ptr = calloc(dirs ? dirs : 1, sizeof *ret->capabilities.directories.ptr);
    for (size_t i = 0; i < dirs; i++) {
        string(&ret->capabilities.directories.ptr[i].guest_path, p->directories[i].guest_path);
        ret->capabilities.directories.ptr[i].access = ACCESS[p->directories[i].access];
    }
    strings(&ret->capabilities.env, p->env);
    strings(&ret->capabilities.http_hosts, p->http_hosts);
}

/* A fresh instance per call: the arguments' memory goes with it. */
bool exports_plugin_invoke(plugin_string_t *name, plugin_string_t *args_json, plugin_output_t *ret,
                           plugin_tool_error_t *err) {
    const th_tool *found = NULL;
    for (size_t i = 0; i < toolhost_plugin.tool_count && !found; i++) {
        const char *candidate = toolhost_plugin.tools[i].name;
        if (strlen(candidate) == name->len && memcmp(candidate, name->ptr, name->len) == 0)
            found = &toolhost_plugin.tools[i];
    }
    th_result result = { 0 };
    if (!found) {
        char *wanted = dup_n((const char *)name->ptr, name->len);
        th_failed(&result, "no tool named `%s`", wanted);
        result.tag = TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_UNKNOWN_TOOL;
    } else {
        th_args args = { (const char *)args_json->ptr, (const char *)args_json->ptr + args_json->len };
        found->run(&args, &result);
        if (!result.set) th_failed(&result, "tool `%s` set no result", found->name);
    }
    plugin_string_t text = { (uint8_t *)result.text, result.len };
    if (result.ok) {
        ret->tag = result.tag;
        ret->val.text = text;
    } else {
        err->tag = result.tag;
        err->val.failed = text;
    }
    return result.ok;
}
