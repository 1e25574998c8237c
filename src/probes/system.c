/* system probe: the machine around the target, every --interval: each block
 * device's I/O (/proc/diskstats: what `iostat -x` shows), and the CPU, the
 * run queue and the pressure (/proc/stat, /proc/pressure, the cgroup's
 * throttling: what `vmstat` shows), so the report can say whether the disk,
 * the CPUs or memory were the limit while the target ran.
 *
 * Tables (cumulative counters as the kernel keeps them; rates are the
 * analysis's job): disk_samples(t_ns, device, reads, read_sectors, writes,
 * write_sectors, io_ms, queue_ms) for each whole device (not partitions,
 * loop, RAM or optical devices), machine_samples(t_ns, running, blocked,
 * busy_ticks, iowait_ticks, steal_ticks, total_ticks, psi_cpu_us,
 * psi_memory_us, psi_io_us, throttled_us). A file the machine lacks (PSI on
 * an older kernel) leaves its columns NULL. */
#define LOG_DOMAIN "system"
#include "probe.h"
#include "../record/recorder.h"
#include "../target/machine.h"
#include "../util/clock.h"
#include "../util/fileio.h"
#include "../util/strbuf.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYSTEM_DEVICES_MAX 64
#define SYSTEM_DISKSTATS_MAX (256 * 1024)

static const char system_schema[] =
    "CREATE TABLE IF NOT EXISTS disk_samples(t_ns INTEGER, device TEXT, reads INTEGER,"
    " read_sectors INTEGER, writes INTEGER, write_sectors INTEGER, io_ms INTEGER,"
    " queue_ms INTEGER);"
    "CREATE TABLE IF NOT EXISTS machine_samples(t_ns INTEGER, running INTEGER,"
    " blocked INTEGER, busy_ticks INTEGER, iowait_ticks INTEGER, steal_ticks INTEGER,"
    " total_ticks INTEGER, psi_cpu_us INTEGER, psi_memory_us INTEGER, psi_io_us INTEGER,"
    " throttled_us INTEGER);";

struct system_state {
	char devices[SYSTEM_DEVICES_MAX][64];
	size_t ndevices;
	sqlite3_stmt *disk, *machine;
	struct strbuf text;
};

/* A whole device worth following: not a loop, RAM, optical or floppy one. */
static int device_wanted(const char *name)
{
	static const char *const skip[] = {"loop", "ram", "zram", "sr", "fd", NULL};
	if (name[0] == '.')
		return 0;
	for (size_t i = 0; skip[i]; i++)
		if (!strncmp(name, skip[i], strlen(skip[i])))
			return 0;
	return 1;
}

static void devices_find(struct system_state *st)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	while (d && (de = readdir(d)) && st->ndevices < SYSTEM_DEVICES_MAX)
		if (device_wanted(de->d_name) && strlen(de->d_name) < sizeof(st->devices[0]))
			strcpy(st->devices[st->ndevices++], de->d_name);
	if (d)
		closedir(d);
}

static int device_followed(const struct system_state *st, const char *name)
{
	for (size_t i = 0; i < st->ndevices; i++)
		if (!strcmp(st->devices[i], name))
			return 1;
	return 0;
}

static void bind_opt(sqlite3_stmt *s, int col, int64_t v)
{
	if (v < 0)
		sqlite3_bind_null(s, col);
	else
		sqlite3_bind_int64(s, col, v);
}

/* One line of /proc/diskstats: major minor name reads merged sectors ms
 * writes merged sectors ms in_flight io_ms weighted_ms ... */
static void disk_line(struct probe_ctx *ctx, struct system_state *st, int64_t t_ns,
		      const char *line)
{
	char name[64];
	unsigned long long v[11];
	if (sscanf(line, "%*u %*u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
		   &v[10]) != 12 ||
	    !device_followed(st, name))
		return;
	sqlite3_bind_int64(st->disk, 1, t_ns);
	sqlite3_bind_text(st->disk, 2, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st->disk, 3, (int64_t)v[0]);
	sqlite3_bind_int64(st->disk, 4, (int64_t)v[2]);
	sqlite3_bind_int64(st->disk, 5, (int64_t)v[4]);
	sqlite3_bind_int64(st->disk, 6, (int64_t)v[6]);
	sqlite3_bind_int64(st->disk, 7, (int64_t)v[9]);
	sqlite3_bind_int64(st->disk, 8, (int64_t)v[10]);
	recorder_step(ctx->rec, st->disk);
}

static void disks_read(struct probe_ctx *ctx, struct system_state *st, int64_t t_ns)
{
	strbuf_reset(&st->text);
	if (file_read_strbuf("/proc/diskstats", &st->text, SYSTEM_DISKSTATS_MAX) <= 0)
		return;
	for (char *l = st->text.buf; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		disk_line(ctx, st, t_ns, l);
		l = nl ? nl + 1 : NULL;
	}
}

static void machine_sample(struct probe_ctx *ctx, struct system_state *st, int64_t t_ns)
{
	struct machine_reading m;
	machine_read_pressure(NULL, &m);
	int64_t idle = m.stat_idle_ticks, io = m.stat_iowait_ticks, steal = m.stat_steal_ticks;
	int64_t busy = m.stat_total_ticks >= 0 && idle >= 0 && io >= 0 && steal >= 0
			   ? m.stat_total_ticks - idle - io - steal
			   : -1;
	sqlite3_stmt *s = st->machine;
	sqlite3_bind_int64(s, 1, t_ns);
	bind_opt(s, 2, m.procs_running);
	bind_opt(s, 3, m.procs_blocked);
	bind_opt(s, 4, busy);
	bind_opt(s, 5, io);
	bind_opt(s, 6, steal);
	bind_opt(s, 7, m.stat_total_ticks);
	bind_opt(s, 8, m.psi_cpu_some_us);
	bind_opt(s, 9, m.psi_memory_some_us);
	bind_opt(s, 10, m.psi_io_some_us);
	bind_opt(s, 11, m.cgroup_throttled_us);
	recorder_step(ctx->rec, s);
}

static int system_available(const struct probe_ctx *ctx, struct strbuf *why)
{
	(void)ctx;
	struct strbuf sb = STRBUF_INIT;
	int ok = file_read_strbuf("/proc/stat", &sb, SYSTEM_DISKSTATS_MAX) > 0;
	strbuf_release(&sb);
	if (!ok)
		strbuf_addstr(why, "/proc/stat cannot be read (no /proc mounted here)");
	return ok ? 0 : -1;
}

static int system_start(struct probe *p, struct probe_ctx *ctx, struct strbuf *why)
{
	struct system_state *st = xcalloc(1, sizeof(*st));
	p->state = st;
	strbuf_init(&st->text);
	sqlite3 *db;
	if (recorder_schema(ctx->rec, system_schema) || !(db = recorder_db(ctx->rec)) ||
	    sqlite3_prepare_v2(db, "INSERT INTO disk_samples VALUES(?,?,?,?,?,?,?,?)", -1,
			       &st->disk, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO machine_samples VALUES(?,?,?,?,?,?,?,?,?,?,?)", -1,
			       &st->machine, NULL) != SQLITE_OK) {
		strbuf_addstr(why, "cannot write its tables");
		return -1;
	}
	devices_find(st);
	p->next_poll_ns = ctx->start_ns;
	return 0;
}

static void system_poll(struct probe *p, struct probe_ctx *ctx, int64_t now_ns)
{
	struct system_state *st = p->state;
	int64_t t_ns = now_ns - ctx->start_ns;
	disks_read(ctx, st, t_ns);
	machine_sample(ctx, st, t_ns);
	p->next_poll_ns = now_ns + ctx->cfg->interval_ns;
}

static void system_stop(struct probe *p, struct probe_ctx *ctx)
{
	system_poll(p, ctx, clock_mono_ns()); /* the last interval */
}

static void system_free(struct probe *p)
{
	struct system_state *st = p->state;
	if (!st)
		return;
	sqlite3_finalize(st->disk);
	sqlite3_finalize(st->machine);
	strbuf_release(&st->text);
	free(st);
	p->state = NULL;
}

static const char *const system_writes[] = { "machine_samples", "disk_samples", NULL };

const struct probe_ops probe_system = {
    .name = "system",
    .writes = system_writes,
    .summary = "the machine: disks, CPU, run queue and pressure (diskstats, stat, PSI)",
    .enabled_by_default = 1,
    .quiet_when_unavailable = 1,
    .available = system_available,
    .start = system_start,
    .poll = system_poll,
    .stop = system_stop,
    .free = system_free,
};
