/* fuzz_gpu_wire: the cuda agent runs inside the target, so its records are
 * the target's to write: any line must parse to a known kind with every
 * string field inside the line, or be refused, and parsing the same line
 * twice must give the same record. The seed holds one line of each kind, so
 * a kind added to the wire but not to the list below fails at once.
 * sources: src/probes/gpu_wire.c src/probes/wire_fields.c
 * max_len: 16384
 * seed: printf 'V\t1\t2\t130001\nQ\tno driver\nD\t0\t132\t85899345920\t9\t0\tNVIDIA H100\nK\t1\t2\t0\t7\t9\t1\t2\t3\t4\t5\t6\t32\t0\t128\t_Z3addPfS_\nM\t1\t2\t0\t7\t10\t4096\t1\t-1\t0\tHtoD\tpinned\tdevice\nS\t1\t2\t0\t7\t11\t512\nA\t1\t2\t77\t12\t0\tcudaMemcpy\nY\t1\t2\t7\t13\tstream\nG\t1\t0\t140000\t4096\t14\talloc\tdevice\nN\t1\t2\t77\t0\t1\tpush\t\tstep 3\nX\trecords_dropped\t3\n' > "$CORPUS/every_kind"
 */
#include "probes/gpu_wire.h"

#include "fuzz_lines.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void line_check(const char *line, size_t len)
{
	struct gpu_record r, again;
	int rc = gpu_record_parse(line, len, &r);
	if (rc != 0 && rc != -1)
		abort();
	if (rc)
		return;
	if (!r.kind || !strchr("VQDKMSAYGNX", r.kind) || r.kind != line[0] || len > GPU_LINE_MAX)
		abort();
	for (int i = 0; i < GPU_WIRE_STRS; i++)
		if (r.s[i] && (r.s[i] < line || r.s[i] + r.slen[i] > line + len ||
			       memchr(r.s[i], '\t', r.slen[i])))
			abort();
	if (gpu_record_parse(line, len, &again) || memcmp(&r, &again, sizeof(r)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	fuzz_lines_each(data, n, line_check);
	return 0;
}
