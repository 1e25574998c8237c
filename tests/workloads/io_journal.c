/* io_journal: an order journal in miniature, the way such tools are written:
 * it appends N order records to a journal file, then builds the day's index
 * of them, printing "phase=NAME start" / "phase=NAME done in S s" around
 * each stage.
 *
 *   ingest  append each record to DIR/journal.log (write_record)
 *   index   sort the records by customer, then amount (build_index)
 *
 * planted: write_record fsyncs after every record (each waits for the disk)
 * and build_index sorts by insertion (quadratic, CPU-bound).
 * fixed: one fsync per 500 records, and qsort.
 *
 * usage: io_journal DIR planted|fixed [RECORDS] [INDEXED] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct order {
	unsigned id, customer, amount_cents;
	char sku[12];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_record(int fd, const struct order *o, int planted, unsigned n)
{
	char line[128];
	int len = snprintf(line, sizeof(line), "%u\t%u\t%u\t%s\n", o->id, o->customer,
			   o->amount_cents, o->sku);
	if (write(fd, line, (size_t)len) != len)
		return -1;
	if (planted || n % 500 == 499)
		return fsync(fd);
	return 0;
}

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->customer != y->customer)
		return x->customer < y->customer ? -1 : 1;
	return x->amount_cents < y->amount_cents ? -1 : x->amount_cents > y->amount_cents;
}

static void build_index(struct order *v, size_t n, int planted)
{
	if (!planted) {
		qsort(v, n, sizeof(*v), order_cmp);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		struct order key = v[i];
		size_t j = i;
		while (j > 0 && order_cmp(&v[j - 1], &key) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = key;
	}
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[2], "planted") && strcmp(argv[2], "fixed"))) {
		fprintf(stderr, "usage: io_journal DIR planted|fixed [RECORDS] [INDEXED]\n");
		return 2;
	}
	int planted = !strcmp(argv[2], "planted");
	unsigned records = argc > 3 ? (unsigned)atoi(argv[3]) : 600;
	size_t indexed = argc > 4 ? (size_t)atol(argv[4]) : 100000;
	char path[4096];
	snprintf(path, sizeof(path), "%s/journal.log", argv[1]);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	struct order *v = calloc(indexed, sizeof(*v));
	if (!v)
		return 1;
	unsigned seed = 12345;
	for (size_t i = 0; i < indexed; i++) {
		seed = seed * 1103515245u + 12345u;
		v[i].id = (unsigned)i;
		v[i].customer = (seed >> 8) % 5000;
		v[i].amount_cents = (seed >> 4) % 100000;
		snprintf(v[i].sku, sizeof(v[i].sku), "SKU-%05u", (seed >> 12) % 90000);
	}
	printf("phase=ingest start\n");
	fflush(stdout);
	double t0 = now_s();
	for (unsigned i = 0; i < records; i++)
		if (write_record(fd, &v[i % indexed], planted, i)) {
			perror("write");
			return 1;
		}
	fsync(fd);
	printf("phase=ingest done in %.2fs\n", now_s() - t0);
	printf("phase=index start\n");
	fflush(stdout);
	t0 = now_s();
	build_index(v, indexed, planted);
	printf("phase=index done in %.2fs\n", now_s() - t0);
	fflush(stdout);
	close(fd);
	unlink(path);
	free(v);
	return 0;
}
