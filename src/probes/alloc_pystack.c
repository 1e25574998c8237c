/* alloc_pystack: resolves the Python stacks the allocation agent read
 * in-process (see alloc_pystack.h). */
#define LOG_DOMAIN "alloc"
#include "alloc_pystack.h"
#include "alloc_decode.h"
#include "../record/stacks.h"
#include "../symbols/cpython.h"
#include "../symbols/cpython_layout.h"
#include "../symbols/pysource.h"
#include "../util/clock.h"
#include "../util/log.h"
#include "../util/strbuf.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A process whose interpreter is not found yet is tried again after this. */
#define PYSTACK_RETRY_NS (100 * NS_PER_MS)
/* Distinct raw stacks cached; past it every record resolves frame by frame. */
#define PYSTACK_STACKS_MAX (1u << 20)
/* An id whose stack did not resolve (the interpreter not found yet, say) is
 * tried again when an allocation names it, at most this often and this many
 * times, for this many ids at once. */
#define PYSTACK_ID_RETRY_NS (100 * NS_PER_MS)
#define PYSTACK_ID_TRIES 20
#define PYSTACK_ID_RETRIES_MAX 4096

/* Code objects described by the agent kept, and the bytes they hold. */
#define PYSTACK_CODES_MAX (1u << 18)
#define PYSTACK_CODE_BYTES_MAX (256u << 20)
/* Source files kept to name methods before 3.11, and their bytes. */
#define PYSTACK_SOURCES_MAX 64
#define PYSTACK_SOURCE_BYTES_MAX (32u << 20)

/* A source file as read for a code object of it. */
struct pystack_source {
	char *file;
	struct strbuf text;
	int readable;
};

/* A code object as the agent described it (ALLOC_REC_PYCODE). */
struct alloc_pycode_entry {
	char *func, *file;
	uint8_t *lt;
	size_t lt_len;
	int firstlineno;
	uint16_t version; /* major << 8 | minor */
	uint16_t units_off;
	int qualified; /* func was looked up in the source (before 3.11) */
};

struct code_key {
	uint64_t space, code, ident;
};

struct pystack_retry {
	pid_t pid;
	uint16_t version;
	uint16_t tries;
	uint32_t n;
	int64_t next_ns;
	uint64_t raw[3 * ALLOC_WIRE_MAX_PYFRAMES];
};

void alloc_pystacks_init(struct alloc_pystacks *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->code_index = (struct hashmap)HASHMAP_INIT;
	ps->frames = (struct hashmap)HASHMAP_INIT;
	ps->stacks = (struct hashmap)HASHMAP_INIT;
	ps->ids = (struct hashmap)HASHMAP_INIT;
	ps->nodes = (struct hashmap)HASHMAP_INIT;
	ps->active = (struct hashmap)HASHMAP_INIT;
}

void alloc_pystacks_release(struct alloc_pystacks *ps)
{
	for (size_t i = 0; i < ps->nprocs; i++)
		cpython_close(ps->procs[i].cp);
	free(ps->procs);
	free(ps->retries);
	for (size_t i = 0; i < ps->ncodes; i++) {
		free(ps->codes[i].func);
		free(ps->codes[i].file);
		free(ps->codes[i].lt);
	}
	free(ps->codes);
	for (size_t i = 0; i < ps->nsources; i++) {
		free(ps->sources[i].file);
		strbuf_release(&ps->sources[i].text);
	}
	free(ps->sources);
	hashmap_release(&ps->code_index);
	hashmap_release(&ps->frames);
	hashmap_release(&ps->stacks);
	hashmap_release(&ps->ids);
	hashmap_release(&ps->nodes);
	hashmap_release(&ps->active);
	memset(ps, 0, sizeof(*ps));
}

/* The interpreter of pid as image space, opened on first use; NULL when it
 * cannot be read (now). An exec'd image replaces the old one. */
static struct cpython_proc *proc_get(struct alloc_pystacks *ps, pid_t pid, uint32_t space)
{
	struct alloc_pystack_proc *p = NULL;
	for (size_t i = 0; i < ps->nprocs && !p; i++)
		if (ps->procs[i].pid == pid)
			p = &ps->procs[i];
	if (!p) {
		if (ps->nprocs == ps->aprocs) {
			ps->aprocs = ps->aprocs ? ps->aprocs * 2 : 8;
			ps->procs = xrealloc(ps->procs, ps->aprocs * sizeof(*ps->procs));
		}
		p = &ps->procs[ps->nprocs++];
		*p = (struct alloc_pystack_proc){ .pid = pid, .space = space };
	}
	if (p->space != space) {
		cpython_close(p->cp);
		*p = (struct alloc_pystack_proc){ .pid = pid, .space = space };
	}
	if (p->cp || p->given_up)
		return p->cp;
	int64_t now = clock_mono_ns();
	if (now < p->retry_ns)
		return NULL;
	struct strbuf why = STRBUF_INIT;
	enum cpython_open_result r = cpython_open(pid, &p->cp, &why);
	if (r == CPYTHON_NOT_PYTHON || (r == CPYTHON_ERROR && !kill(pid, 0))) {
		p->retry_ns = now + PYSTACK_RETRY_NS; /* a read failed, the process lives */
	} else if (r == CPYTHON_ERROR) {
		p->given_up = 1; /* gone: only stacks seen before resolve now */
	} else if (r != CPYTHON_FOUND) {
		p->given_up = 1;
		log_info("the Python stacks read in process %d cannot be resolved (%s): its "
			 "allocations fall back to the python probe's samples",
			 (int)pid, why.buf);
	}
	strbuf_release(&why);
	return p->cp;
}

int alloc_pystacks_code(struct alloc_pystacks *ps, uint32_t space, const unsigned char *rec,
			size_t len)
{
	struct alloc_pycode c;
	if (alloc_pycode_parse(rec, len, &c))
		return -1;
	struct code_key key = {space, c.code, c.ident};
	if (hashmap_get(&ps->code_index, &key, sizeof(key)) || ps->ncodes >= PYSTACK_CODES_MAX ||
	    ps->code_bytes >= PYSTACK_CODE_BYTES_MAX)
		return 0;
	/* A name of 1024 characters of 4 bytes: 4096 UTF-8 bytes at most. */
	char name[4 * ALLOC_PYCODE_MAX_NAME + 1], file[4 * ALLOC_WIRE_MAX_PATH + 1];
	if (cpython_chars_utf8(c.name, c.name_len, c.name_kind, name, sizeof(name)) ||
	    cpython_chars_utf8(c.file, c.file_len, c.file_kind, file, sizeof(file)))
		return 0; /* not a character: its frames are read from the process */
	if (ps->ncodes == ps->acodes) {
		ps->acodes = ps->acodes ? 2 * ps->acodes : 256;
		ps->codes = xrealloc(ps->codes, ps->acodes * sizeof(*ps->codes));
	}
	struct alloc_pycode_entry *e = &ps->codes[ps->ncodes];
	*e = (struct alloc_pycode_entry){.func = xstrdup(name),
					 .file = xstrdup(file),
					 .lt = xmalloc(c.table_len ? c.table_len : 1),
					 .lt_len = c.table_len,
					 .firstlineno = c.firstlineno,
					 .version = c.py_version,
					 .units_off = c.units_off};
	memcpy(e->lt, c.table, c.table_len);
	ps->code_bytes += sizeof(*e) + c.table_len + strlen(name) + strlen(file);
	hashmap_put(&ps->code_index, &key, sizeof(key), (int64_t)ps->ncodes++);
	return 0;
}

/* The text of a source file of process pid, read through the process while
 * it lives, else at its absolute path as sonde sees it; once per file. NULL
 * when it cannot be read or the cache is full. */
static const struct strbuf *source_get(struct alloc_pystacks *ps, pid_t pid, const char *file)
{
	for (size_t i = 0; i < ps->nsources; i++)
		if (!strcmp(ps->sources[i].file, file))
			return ps->sources[i].readable ? &ps->sources[i].text : NULL;
	if (ps->nsources == PYSTACK_SOURCES_MAX || ps->source_bytes >= PYSTACK_SOURCE_BYTES_MAX)
		return NULL;
	if (!ps->sources)
		ps->sources = xcalloc(PYSTACK_SOURCES_MAX, sizeof(*ps->sources));
	struct pystack_source *src = &ps->sources[ps->nsources++];
	src->file = xstrdup(file);
	src->text = (struct strbuf)STRBUF_INIT;
	src->readable = !pysource_read(pid, file, &src->text);
	if (!src->readable && file[0] == '/') {
		strbuf_reset(&src->text);
		src->readable = !pysource_read(getpid(), file, &src->text);
	}
	ps->source_bytes += src->text.len;
	return src->readable ? &src->text : NULL;
}

/* Before 3.11 (co_name only): Class.method from the source, as the
 * out-of-process reader names it (cpython_walk.c); once per code object. */
static void code_qualify(struct alloc_pystacks *ps, struct alloc_pycode_entry *c, pid_t pid)
{
	if (c->qualified)
		return;
	c->qualified = 1;
	if ((c->version & 0xff) >= 11 || c->func[0] == '<')
		return;
	const struct strbuf *text = source_get(ps, pid, c->file);
	struct strbuf q = STRBUF_INIT;
	if (text && !pysource_qualname(text->buf, text->len, c->firstlineno, c->func, &q)) {
		free(c->func);
		c->func = strbuf_detach(&q);
	}
	strbuf_release(&q);
}

/* The frame at pos of the code object the agent described as c (at code). */
static void code_frame(const struct alloc_pycode_entry *c, uint64_t code, uint64_t pos,
		       struct cpython_frame *f)
{
	int minor = c->version & 0xff;
	int64_t addr = cpython_code_addr(minor, c->units_off, code, pos);
	*f = (struct cpython_frame){
	    .function = c->func,
	    .file = c->file,
	    .line = cpython_code_line(minor, c->lt, c->lt_len, c->firstlineno, addr)};
}

/* The frame (code, position, identity) read from the live process of image
 * space, which runs a Python of version major << 8 | minor as the agent read
 * it: 0 and *f filled, or -1. */
static int live_frame(struct alloc_pystacks *ps, pid_t pid, uint32_t space, uint16_t version,
		      const uint64_t *raw, struct cpython_frame *f)
{
	struct cpython_proc *cp = proc_get(ps, pid, space);
	char ver[16];
	snprintf(ver, sizeof(ver), "%d.%d", version >> 8, version & 0xff);
	if (!cp ||
	    strcmp(cpython_version(cp), ver)) /* the version the agent read must be sonde's */
		return -1;
	return cpython_frame_at(cp, raw[0], raw[1], raw[2], f);
}

/* The frames row of one frame (code, position, identity) of image space; 0
 * when it cannot be resolved. From the agent's description of its code, else
 * from the live process. */
static int64_t frame_get(struct alloc_pystacks *ps, struct stack_writer *sw, pid_t pid,
			 uint32_t space, uint16_t version, const uint64_t *raw)
{
	struct {
		uint64_t space, code, pos, ident;
	} key = { space, raw[0], raw[1], raw[2] };
	int64_t *v = hashmap_get(&ps->frames, &key, sizeof(key));
	if (v)
		return *v;
	struct code_key ck = {space, raw[0], raw[2]};
	int64_t *ci = hashmap_get(&ps->code_index, &ck, sizeof(ck));
	struct cpython_frame f;
	if (ci) {
		code_qualify(ps, &ps->codes[*ci], pid);
		code_frame(&ps->codes[*ci], raw[0], raw[1], &f);
	} else if (live_frame(ps, pid, space, version, raw, &f)) {
		return 0;
	}
	struct frame_info fi = { .function = f.function, .file = f.file, .line = f.line,
				 .module = f.file, .kind = "python" };
	int64_t id = stack_frame(sw, &fi);
	if (id > 0)
		hashmap_put(&ps->frames, &key, sizeof(key), id);
	return id > 0 ? id : 0;
}

/* The Python path of n raw frames (innermost first), all frames or none. */
static int64_t stack_resolve(struct alloc_pystacks *ps, struct stack_writer *sw, pid_t pid,
			     uint32_t space, uint16_t version, const uint64_t *raw, size_t n)
{
	int64_t ids[ALLOC_WIRE_MAX_PYFRAMES];
	for (size_t k = 0; k < n; k++) {
		int64_t id = frame_get(ps, sw, pid, space, version, raw + 3 * k);
		if (!id)
			return 0;
		ids[n - 1 - k] = id;
	}
	return stack_intern(sw, ids, n);
}

/* A stack resolved for image space: its node is one of this module's, and the
 * image has Python stacks (once per id, not per allocation). */
static void pystack_mark(struct alloc_pystacks *ps, uint32_t space, int64_t node)
{
	hashmap_put(&ps->nodes, &node, sizeof(node), 1);
	hashmap_put(&ps->active, &space, sizeof(space), 1);
}

/* The stack node of n raw frames of image space (a Python of version
 * major << 8 | minor, as the agent read it), from the cache or resolved now;
 * 0 when they cannot be resolved (now). */
static int64_t raw_resolve(struct alloc_pystacks *ps, struct stack_writer *sw, pid_t pid,
			   uint32_t space, uint16_t version, const uint64_t *raw, size_t n)
{
	/* The stack cache's key: the image, then the frames as sent. */
	unsigned char key[sizeof(uint64_t) + 24 * ALLOC_WIRE_MAX_PYFRAMES];
	uint64_t sp = space;
	memcpy(key, &sp, sizeof(sp));
	memcpy(key + sizeof(sp), raw, n * 24);
	size_t klen = sizeof(sp) + n * 24;
	int64_t *cached = hashmap_get(&ps->stacks, key, klen);
	if (cached)
		return *cached;
	if (!n || !sw)
		return 0;
	int64_t node = stack_resolve(ps, sw, pid, space, version, raw, n);
	if (node <= 0)
		return 0;
	pystack_mark(ps, space, node);
	if (ps->stacks.len < PYSTACK_STACKS_MAX)
		hashmap_put(&ps->stacks, key, klen, node);
	return node;
}

/* Counts an allocation's stack: node > 0 resolved, -1 not. */
int alloc_pystacks_record(struct alloc_pystacks *ps, struct stack_writer *sw, pid_t pid,
			  uint32_t space, uint32_t tid, const unsigned char *rec, size_t len)
{
	struct alloc_rec_pystack hd;
	if (len < sizeof(hd) || (len - sizeof(hd)) % 24 ||
	    (len - sizeof(hd)) / 24 > ALLOC_WIRE_MAX_PYFRAMES)
		return -1;
	memcpy(&hd, rec, sizeof(hd));
	size_t n = (len - sizeof(hd)) / 24;
	uint64_t raw[3 * ALLOC_WIRE_MAX_PYFRAMES];
	memcpy(raw, rec + sizeof(hd), n * 24);
	int64_t node = raw_resolve(ps, sw, pid, space, hd.py_version, raw, n);
	if (node <= 0 && n && ps->nretries < PYSTACK_ID_RETRIES_MAX) {
		/* Kept to try again: the value -2 - k names retry k. */
		if (ps->nretries == ps->aretries) {
			ps->aretries = ps->aretries ? 2 * ps->aretries : 16;
			ps->retries = xrealloc(ps->retries, ps->aretries * sizeof(*ps->retries));
		}
		struct pystack_retry *r = &ps->retries[ps->nretries];
		*r = (struct pystack_retry){ .pid = pid, .version = hd.py_version, .n = (uint32_t)n,
					     .next_ns = clock_mono_ns() + PYSTACK_ID_RETRY_NS };
		memcpy(r->raw, raw, n * 24);
		node = -2 - (int64_t)ps->nretries++;
	} else if (node <= 0) {
		node = -1;
	}
	uint32_t id_key[3] = { space, tid, hd.id };
	hashmap_put(&ps->ids, id_key, sizeof(id_key), node);
	return 0;
}

int64_t alloc_pystacks_take(struct alloc_pystacks *ps, struct stack_writer *sw, uint32_t space,
			    uint32_t tid, uint32_t id)
{
	uint32_t key[3] = { space, tid, id };
	int64_t *v = hashmap_get(&ps->ids, key, sizeof(key));
	int64_t node = v ? *v : -1;
	if (node < -1) {
		struct pystack_retry *r = &ps->retries[-2 - node];
		int64_t now = clock_mono_ns();
		if (now >= r->next_ns) {
			int64_t got = raw_resolve(ps, sw, r->pid, space, r->version, r->raw, r->n);
			r->next_ns = now + PYSTACK_ID_RETRY_NS;
			if (got > 0 || ++r->tries >= PYSTACK_ID_TRIES)
				*v = got > 0 ? got : -1;
			node = got > 0 ? got : node;
		}
	}
	if (node > 0) {
		ps->resolved++;
		return node;
	}
	ps->unresolved++;
	return -1;
}

int alloc_pystacks_active(const struct alloc_pystacks *ps, uint32_t space)
{
	return ps->active.len && hashmap_get(&ps->active, &space, sizeof(space)) != NULL;
}

int alloc_pystacks_made(const struct alloc_pystacks *ps, int64_t node)
{
	return ps->nodes.len && hashmap_get(&ps->nodes, &node, sizeof(node)) != NULL;
}
