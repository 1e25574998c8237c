/* wire_check: the GPU check's reader of a cuda-PID.txt (check_cuda_agent.sh):
 * every line must parse (gpu_wire.h), V must come first, and with a window
 * "T0 T1" (CLOCK_MONOTONIC ns) every timed record must lie inside it.
 * Prints the count of each kind and the first bad lines; exits 1 when a
 * line is bad, V is not first or a time is outside the window. */
#include "probes/gpu_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char line[GPU_LINE_MAX + 2];

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: wire_check FILE [T0_NS T1_NS]\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	long long t0 = argc == 4 ? atoll(argv[2]) : 0, t1 = argc == 4 ? atoll(argv[3]) : 0;
	long count[128] = { 0 }, bad = 0, outside = 0, n = 0;
	int v_first = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");
		struct gpu_record r;
		if (gpu_record_parse(line, len, &r)) {
			if (bad++ < 5)
				printf("bad line %ld: %.200s\n", n + 1, line);
			n++;
			continue;
		}
		if (!n++)
			v_first = r.kind == 'V';
		count[(int)r.kind]++;
		int timed = strchr("KMSAYN", r.kind) != NULL;
		if (t1 && timed && (r.n[0] < t0 || r.n[1] > t1 || r.n[1] < r.n[0]) && outside++ < 5)
			printf("outside [%lld, %lld]: %.200s", t0, t1, line);
		if (t1 && r.kind == 'G' && (r.n[0] < t0 || r.n[0] > t1) && outside++ < 5)
			printf("outside [%lld, %lld]: %.200s", t0, t1, line);
	}
	fclose(f);
	printf("%s: %ld lines:", argv[1], n);
	for (const char *k = "VQDKMSAYGNX"; *k; k++)
		printf(" %c=%ld", *k, count[(int)*k]);
	printf("; bad %ld, outside the window %ld, V first %s\n", bad, outside, v_first ? "yes" : "NO");
	return bad || outside || !v_first ? 1 : 0;
}
