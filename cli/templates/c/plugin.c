/* `{{name}}`: a toolhost tool plugin. */
#include "toolhost.h"

#include <ctype.h>

static const th_param params[] = {
    { "text", TH_STRING, "the text to count", TH_REQUIRED },
};

static void count(const th_args *args, th_result *result) {
    size_t len, words = 0;
    const char *text = th_string(args, "text", &len);
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)text[i]) && (i == 0 || isspace((unsigned char)text[i - 1]))) words++;
    th_json(result, "{\"words\":%zu}", words);
}

static const th_tool tools[] = {
    { .name = "{{name}}", .description = "Count the words in a text", .params = params, .param_count = 1,
      .run = count, .agent_callable = true, .example = "{\"text\": \"one two three\"}" },
};

TOOLHOST_PLUGIN("{{name}}", "0.1.0", "Count words in text", tools);
