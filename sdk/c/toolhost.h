/*
 * Write a toolhost tool plugin in C. A plugin is a table of tools and one
 * TOOLHOST_PLUGIN line; toolhost.c turns it into the component's exports
 * over the bindings `wit-bindgen c wit --world plugin` generates (gen/).
 *
 *     static const th_param count_params[] = {
 *         { "text", TH_STRING, "the text to count", TH_REQUIRED },
 *     };
 *     static void count(const th_args *args, th_result *result) {
 *         size_t len;
 *         const char *text = th_string(args, "text", &len);
 *         ...
 *         th_json(result, "{\"words\":%d}", words);
 *     }
 *     static const th_tool tools[] = {
 *         { .name = "count", .description = "Count the words in a text",
 *           .params = count_params, .param_count = 1, .run = count, .agent_callable = true },
 *     };
 *     TOOLHOST_PLUGIN("wordcount", "0.1.0", "Count words in text", tools);
 *
 * The host checks every call against the declaration before the plugin
 * runs (required parameters present, values of the declared type), so a
 * getter returns NULL or false only for an optional parameter left out.
 * Every call runs in a fresh instance: nothing needs freeing, and no static
 * survives to the next call.
 */
#ifndef TOOLHOST_H
#define TOOLHOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The toolhost plugin API these helpers are written against. */
#define TH_API_VERSION "0.1.0"

typedef enum { TH_STRING, TH_INTEGER, TH_NUMBER, TH_BOOLEAN, TH_JSON } th_type;
typedef enum { TH_PUBLIC, TH_MODERATE, TH_SENSITIVE } th_permission;
typedef enum { TH_READ, TH_READ_WRITE } th_access;

#define TH_REQUIRED true
#define TH_OPTIONAL false

typedef struct {
    const char *name;
    th_type type;
    const char *description;
    bool required;
} th_param;

/* A call's arguments: the JSON object the host sent. */
typedef struct th_args th_args;
/* What a call returns: set by exactly one of th_text, th_json,
 * th_invalid_args or th_failed. */
typedef struct th_result th_result;

typedef struct {
    const char *name;
    const char *description;
    const th_param *params;
    size_t param_count;
    void (*run)(const th_args *args, th_result *result);
    th_permission permission;
    bool agent_callable;
    bool result_approval;
    bool distributed_exposed;
    const char *const *tags;   /* NULL-terminated, or NULL */
    const char *example;       /* a JSON object of arguments, or NULL */
} th_tool;

typedef struct {
    const char *guest_path;
    th_access access;
} th_directory;

typedef struct {
    const char *name;
    const char *version;
    const char *description;
    const th_tool *tools;
    size_t tool_count;
    const th_directory *directories; /* ended by { NULL }, or NULL */
    const char *const *env;          /* NULL-terminated, or NULL */
    const char *const *http_hosts;   /* NULL-terminated, or NULL */
} th_plugin;

/* Declare the plugin: its name, version, description and tool table. */
#define TOOLHOST_PLUGIN(NAME, VERSION, DESCRIPTION, TOOLS)                                      \
    const th_plugin toolhost_plugin = {                                                         \
        .name = NAME, .version = VERSION, .description = DESCRIPTION,                          \
        .tools = TOOLS, .tool_count = sizeof(TOOLS) / sizeof((TOOLS)[0]) }

/* The argument `key` as a NUL-terminated string (its length, which may
 * count inner NULs, in *len unless len is NULL); NULL when absent or not
 * a string. */
const char *th_string(const th_args *args, const char *key, size_t *len);
/* The integer argument `key` in *out; false when absent or not an integer. */
bool th_integer(const th_args *args, const char *key, int64_t *out);
/* The number argument `key` in *out; false when absent or not a number. */
bool th_number(const th_args *args, const char *key, double *out);
/* The boolean argument `key` in *out; false when absent or not a boolean. */
bool th_boolean(const th_args *args, const char *key, bool *out);
/* The argument `key` as its JSON text; NULL when absent. */
const char *th_json_arg(const th_args *args, const char *key);

/* `s` as a JSON string literal, quotes included. */
char *th_quote(const char *s, size_t len);

/* Succeed with text, or with a JSON document (printf-style). */
void th_text(th_result *result, const char *format, ...) __attribute__((format(printf, 2, 3)));
void th_json(th_result *result, const char *format, ...) __attribute__((format(printf, 2, 3)));
/* Fail: the arguments were wrong, or the tool failed (printf-style). The
 * message goes back to the model. */
void th_invalid_args(th_result *result, const char *format, ...) __attribute__((format(printf, 2, 3)));
void th_failed(th_result *result, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif
