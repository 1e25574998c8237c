/* thread_names: names from COMM and FORK records, /proc for the rest. */
#include "thread_names.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/fileio.h"

static uint64_t key_of(pid_t pid, pid_t tid)
{
	return ((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid;
}

static struct thread_name_entry *entry_find(const struct thread_names *tn, pid_t pid, pid_t tid)
{
	uint64_t key = key_of(pid, tid);
	int64_t *i = hashmap_get(&tn->index, &key, sizeof(key));
	return i ? &tn->v[*i] : NULL;
}

/* The thread's entry, made empty when new; NULL when out of memory. */
static struct thread_name_entry *entry_get(struct thread_names *tn, pid_t pid, pid_t tid)
{
	struct thread_name_entry *e = entry_find(tn, pid, tid);
	if (e)
		return e;
	if (tn->n == tn->alloc) {
		size_t alloc = tn->alloc ? 2 * tn->alloc : 64;
		struct thread_name_entry *v = realloc(tn->v, alloc * sizeof(*v));
		if (!v)
			return NULL;
		tn->v = v;
		tn->alloc = alloc;
	}
	uint64_t key = key_of(pid, tid);
	if (!hashmap_put(&tn->index, &key, sizeof(key), (int64_t)tn->n))
		return NULL;
	e = &tn->v[tn->n++];
	*e = (struct thread_name_entry){ .pid = pid, .tid = tid };
	return e;
}

/* Copies at most THREAD_NAME_MAX - 1 bytes of src, as the kernel keeps. */
static void name_copy(char *dst, const char *src)
{
	size_t n = strnlen(src, THREAD_NAME_MAX - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

void thread_names_set(struct thread_names *tn, pid_t pid, pid_t tid, const char *name)
{
	struct thread_name_entry *e = entry_get(tn, pid, tid);
	if (!e || !name)
		return;
	if (strncmp(e->name, name, THREAD_NAME_MAX - 1))
		e->written = 0; /* renamed: hand the new name out */
	name_copy(e->name, name);
}

void thread_names_fork(struct thread_names *tn, pid_t pid, pid_t tid, pid_t ppid, pid_t ptid)
{
	const struct thread_name_entry *parent = entry_find(tn, ppid, ptid);
	if (!parent || !parent->name[0])
		return;
	char name[THREAD_NAME_MAX];
	name_copy(name, parent->name); /* entry_get may move parent */
	thread_names_set(tn, pid, tid, name);
}

/* /proc's name of a running thread; 0 when it has one. */
static int name_from_proc(pid_t pid, pid_t tid, char *out)
{
	char path[96], comm[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	if (file_read_small(path, comm, sizeof(comm)) <= 0)
		return -1;
	comm[strcspn(comm, "\n")] = '\0';
	if (!comm[0])
		return -1;
	name_copy(out, comm);
	return 0;
}

const char *thread_names_first_use(struct thread_names *tn, pid_t pid, pid_t tid)
{
	struct thread_name_entry *e = entry_get(tn, pid, tid);
	if (!e || e->written)
		return NULL;
	e->written = 1; /* /proc is asked once per thread */
	if (!e->name[0] && name_from_proc(pid, tid, e->name)) {
		const struct thread_name_entry *main_thread = entry_find(tn, pid, pid);
		if (!main_thread || !main_thread->name[0])
			return NULL;
		memcpy(e->name, main_thread->name, THREAD_NAME_MAX);
	}
	return e->name;
}

void thread_names_each_unused(struct thread_names *tn,
			      void (*fn)(void *arg, pid_t pid, pid_t tid, const char *name),
			      void *arg)
{
	for (size_t i = 0; i < tn->n; i++) {
		struct thread_name_entry *e = &tn->v[i];
		if (e->written || !e->name[0])
			continue;
		e->written = 1;
		fn(arg, e->pid, e->tid, e->name);
	}
}

void thread_names_release(struct thread_names *tn)
{
	hashmap_release(&tn->index);
	free(tn->v);
	*tn = (struct thread_names)THREAD_NAMES_INIT;
}
