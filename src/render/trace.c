/* trace: trace.json, the run as a timeline in the Chrome trace event format
 * (it opens in ui.perfetto.dev and chrome://tracing): the events of
 * trace_events.h, one per line. Times are microseconds since the run's start;
 * otherData.dropped_events counts the events past TRACE_EVENTS_MAX. */
#include "render.h"
#include "trace_events.h"
#include "../util/strbuf.h"

#include <inttypes.h>
#include <string.h>

struct json_sink {
	FILE *out;
	int64_t written;
};

/* Starts an event's line. */
static void ev_start(struct json_sink *j)
{
	fputs(j->written++ ? ",\n" : "\n", j->out);
}

/* A JSON string of text that is valid UTF-8. */
static void put_str(FILE *out, const char *s)
{
	json_t *j = json_string(s);
	if (!j || json_dumpf(j, out, JSON_ENCODE_ANY))
		fputs("\"?\"", out);
	json_decref(j);
}

static void put_us(FILE *out, const char *key, int64_t ns)
{
	/* the sign apart: -500 ns is -0.500 us (ns / 1000 would drop it) */
	uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	fprintf(out, ",\"%s\":%s%" PRIu64 ".%03d", key, ns < 0 ? "-" : "", mag / 1000,
		(int)(mag % 1000));
}

static void json_name(void *arg, int thread, int64_t pid, int64_t tid, const char *name)
{
	struct json_sink *j = arg;
	ev_start(j);
	fprintf(j->out,
		"{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
		",\"args\":{\"name\":",
		thread ? "thread_name" : "process_name", pid, tid);
	put_str(j->out, name);
	fputs("}}", j->out);
}

static void json_slice(void *arg, const char *cat, const char *name, int64_t pid, int64_t tid,
		       int64_t start_ns, int64_t end_ns, const char *args_json)
{
	struct json_sink *j = arg;
	ev_start(j);
	fprintf(j->out, "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":", cat);
	put_str(j->out, name);
	fprintf(j->out, ",\"pid\":%" PRId64 ",\"tid\":%" PRId64, pid, tid);
	put_us(j->out, "ts", start_ns);
	put_us(j->out, "dur", end_ns - start_ns);
	if (args_json)
		fprintf(j->out, ",\"args\":{%s}", args_json);
	fputc('}', j->out);
}

static void json_counter(void *arg, const char *name, int64_t pid, int64_t ts_ns,
			 const struct trace_arg *args, size_t nargs)
{
	struct json_sink *j = arg;
	ev_start(j);
	fputs("{\"ph\":\"C\",\"name\":", j->out);
	put_str(j->out, name);
	fprintf(j->out, ",\"pid\":%" PRId64, pid);
	put_us(j->out, "ts", ts_ns);
	fputs(",\"args\":{", j->out);
	for (size_t i = 0; i < nargs; i++)
		fprintf(j->out, "%s\"%s\":%.*f", i ? "," : "", args[i].key, args[i].decimals,
			args[i].value);
	fputs("}}", j->out);
}

static void json_flow(void *arg, uint64_t id, int end, int64_t pid, int64_t tid, int64_t ts_ns)
{
	struct json_sink *j = arg;
	ev_start(j);
	fprintf(j->out,
		"{\"ph\":\"%s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":%" PRIu64
		",\"pid\":%" PRId64 ",\"tid\":%" PRId64,
		end ? "f\",\"bp\":\"e" : "s", id, pid, tid);
	put_us(j->out, "ts", ts_ns);
	fputc('}', j->out);
}

static int trace_render(const struct render_ctx *ctx, FILE *out, struct strbuf *err)
{
	struct json_sink j = {.out = out};
	const struct trace_sink sink = {.arg = &j,
					.name = json_name,
					.slice = json_slice,
					.counter = json_counter,
					.flow = json_flow};
	struct trace_counts n = {0, 0};
	fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", out);
	int rc = trace_events_each(ctx, &sink, &n, err);
	fprintf(out, "\n],\"otherData\":{\"events\":%" PRId64 ",\"dropped_events\":%" PRId64 "}}\n",
		n.events, n.dropped);
	return rc;
}

const struct renderer render_trace = {
    .name = "trace", .file = "trace.json", .render = trace_render};

const struct exporter export_trace = {
	.name = "trace",
	.description = "Chrome trace event JSON for ui.perfetto.dev or chrome://tracing; "
		       "also called chrome",
	.renderer = &render_trace,
	.needs_report = 1,
	.alias = "chrome",
};
