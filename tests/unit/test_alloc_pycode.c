/* Unit tests of the alloc probe's Python stacks resolved from the agent's
 * descriptions of code objects (ALLOC_REC_PYCODE), with no process to read:
 * hand-written records of a pid that cannot exist. */
#include "agents/alloc/alloc_wire.h"
#include "probes/alloc_pystack.h"
#include "record/recorder.h"
#include "record/stacks.h"
#include "stacks_fixture.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#define NO_PID ((pid_t)0x3fffffff) /* above any pid_max */
#define CODE 0x7f0000002000ULL
#define IDENT 0x5555ULL
#define UNITS_OFF 200

/* A PYCODE record at out (room enough); returns its length. */
static size_t pycode(unsigned char *out, uint16_t version, const char *name, const char *file,
		     int first, const uint8_t *table, size_t table_len)
{
	struct alloc_rec_pycode r = {.code = CODE,
				     .ident = IDENT,
				     .firstlineno = first,
				     .py_version = version,
				     .name_kind = 1,
				     .file_kind = 1,
				     .name_len = (uint16_t)strlen(name),
				     .file_len = (uint16_t)strlen(file),
				     .table_len = (uint16_t)table_len,
				     .units_off = version >= 0x030b ? UNITS_OFF : 0};
	size_t len = (sizeof(r) + r.name_len + r.file_len + table_len + 7) & ~(size_t)7;
	r.h = (struct alloc_rec_head){ALLOC_REC_PYCODE, (uint16_t)len, 7, 1};
	memset(out, 0, len);
	memcpy(out, &r, sizeof(r));
	memcpy(out + sizeof(r), name, r.name_len);
	memcpy(out + sizeof(r) + r.name_len, file, r.file_len);
	memcpy(out + sizeof(r) + r.name_len + r.file_len, table, table_len);
	return len;
}

/* A PYSTACK record of one frame of CODE at pos, named id by thread 7. */
static size_t pystack(unsigned char *out, uint16_t version, uint32_t id, uint64_t pos)
{
	struct alloc_rec_pystack p = {{ALLOC_REC_PYSTACK, sizeof(p) + 24, 7, 1}, version, 0, id};
	uint64_t frame[3] = {CODE, pos, IDENT};
	memcpy(out, &p, sizeof(p));
	memcpy(out + sizeof(p), frame, sizeof(frame));
	return sizeof(p) + 24;
}

/* The innermost frame of node: function, line. */
static int node_frame(struct recorder *rec, int64_t node, char *func, size_t cap, int *line)
{
	sqlite3_stmt *st;
	int rc = -1;
	if (sqlite3_prepare_v2(recorder_db(rec),
			       "SELECT f.function, f.line FROM stack_nodes n JOIN frames f"
			       " ON f.id = n.frame WHERE n.id = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, node);
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(func, cap, "%s", (const char *)sqlite3_column_text(st, 0));
		*line = sqlite3_column_int(st, 1);
		rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

/* A recording and the probe's Python stacks, for one test. */
struct pyctx {
	struct fixture fx;
	struct stack_writer *sw;
	struct alloc_pystacks ps;
};

static void pyctx_open(struct pyctx *c)
{
	fixture_open(&c->fx, 0);
	c->sw = recorder_stacks(c->fx.rec);
	alloc_pystacks_init(&c->ps);
}

static void pyctx_close(struct pyctx *c)
{
	alloc_pystacks_release(&c->ps);
	fixture_close(&c->fx);
}

/* Image space describes CODE (version, name, file, first line, table), then
 * thread 7 sends a stack of it at pos under id: the node an allocation
 * naming id gets, and its innermost frame's function and line. */
static int64_t pyctx_resolve(struct pyctx *c, uint32_t space, uint16_t version, const char *name,
			     const char *file, int first, const uint8_t *table, size_t table_len,
			     uint32_t id, uint64_t pos, char *func, size_t cap, int *line)
{
	unsigned char rec[1024];
	size_t len = pycode(rec, version, name, file, first, table, table_len);
	CHECK(alloc_pystacks_code(&c->ps, space, rec, len) == 0);
	len = pystack(rec, version, id, pos);
	CHECK(alloc_pystacks_record(&c->ps, c->sw, NO_PID, space, 7, rec, len) == 0);
	int64_t node = alloc_pystacks_take(&c->ps, c->sw, space, 7, id);
	func[0] = '\0';
	*line = 0;
	if (node > 0)
		CHECK(node_frame(c->fx.rec, node, func, cap, line) == 0);
	return node;
}

TEST(pycode_resolves_after_exit,
     "a 3.11 Python stack resolves from the agent's description of its code, with no process "
     "to read: co_qualname, the file, the line of its instruction")
{
	struct pyctx c;
	pyctx_open(&c);
	/* Two entries of the 3.11 location table without columns (code 13):
	 * unit 0 is line 11, unit 1 line 13. */
	const uint8_t table[] = {0x80 | 13 << 3, 2, 0x80 | 13 << 3, 4};
	char func[256];
	int line;
	int64_t node =
	    pyctx_resolve(&c, 1, 0x030b, "Maker.build_small", "/w/py_small.py", 10, table,
			  sizeof(table), 3, CODE + UNITS_OFF + 2, func, sizeof(func), &line);
	CHECK(node > 0);
	CHECK(!strcmp(func, "Maker.build_small"));
	CHECK(line == 13);
	CHECK(alloc_pystacks_made(&c.ps, node) && alloc_pystacks_active(&c.ps, 1));
	pyctx_close(&c);
}

TEST(pycode_names_method_from_source,
     "before 3.11, a code's co_name is made Class.method from its source file, as the "
     "out-of-process reader names it, and a Latin-1 name comes out as UTF-8")
{
	struct pyctx c;
	pyctx_open(&c);
	char path[400];
	snprintf(path, sizeof(path), "%s/work.py", c.fx.dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fputs("class Worker:\n    def make(self):\n        return [0] * 9\n", f);
	fclose(f);
	const uint8_t table[] = {2, 1}; /* 3.10: bytes [0, 2) are line 3 */
	char func[256];
	int line;
	CHECK(pyctx_resolve(&c, 1, 0x030a, "make", path, 2, table, sizeof(table), 4, 0, func,
			    sizeof(func), &line) > 0);
	CHECK(!strcmp(func, "Worker.make"));
	CHECK(line == 3);
	/* Another code object, of image 2, named in Latin-1 ("grüß"). */
	CHECK(pyctx_resolve(&c, 2, 0x030a, "gr\xfc\xdf", "/nowhere/x.py", 1, table, sizeof(table),
			    5, 0, func, sizeof(func), &line) > 0);
	CHECK(!strcmp(func, "gr\xc3\xbc\xc3\x9f"));
	unlink(path);
	pyctx_close(&c);
}

TEST(pycode_malformed_or_missing,
     "a description whose strings run past the record is malformed; a stack whose code was "
     "never described and whose process is gone stays unresolved")
{
	struct pyctx c;
	pyctx_open(&c);
	const uint8_t table[] = {2, 1};
	unsigned char rec[512];
	size_t len = pycode(rec, 0x030b, "f", "/w/x.py", 1, table, sizeof(table));
	CHECK(alloc_pystacks_code(&c.ps, 1, rec, sizeof(struct alloc_rec_pycode) - 8) == -1);
	struct alloc_rec_pycode r;
	memcpy(&r, rec, sizeof(r));
	r.file_len = 400; /* past the record's end */
	memcpy(rec, &r, sizeof(r));
	CHECK(alloc_pystacks_code(&c.ps, 1, rec, len) == -1);
	r.file_len = 7;
	r.name_kind = 3;
	memcpy(rec, &r, sizeof(r));
	CHECK(alloc_pystacks_code(&c.ps, 1, rec, len) == -1);
	len = pystack(rec, 0x030b, 6, CODE + UNITS_OFF);
	CHECK(alloc_pystacks_record(&c.ps, c.sw, NO_PID, 1, 7, rec, len) == 0);
	CHECK(alloc_pystacks_take(&c.ps, c.sw, 1, 7, 6) == -1);
	pyctx_close(&c);
}

CHECK_MAIN()
