/* test_finding_ids: each analysis declares the ids of the findings it may
 * add, each "dimension.pattern"; a finding added with an id its analysis does
 * not declare, or a dimension outside the fixed set, is caught. */
#include "check.h"
#include "analysis/analysis.h"
#include "analysis/findings.h"
#include "util/strbuf.h"

#include <ctype.h>
#include <string.h>

/* 1 when id is "word.word" in lower case and underscores. */
static int id_well_formed(const char *id)
{
	const char *dot = strchr(id, '.');
	if (!dot || dot == id || !dot[1] || strchr(dot + 1, '.'))
		return 0;
	for (const char *c = id; *c; c++)
		if (c != dot && !islower((unsigned char)*c) && *c != '_')
			return 0;
	return 1;
}

TEST(declared, "every analysis's finding ids are dimension.pattern, each declared once by it")
{
	size_t total = 0;
	for (size_t i = 0; analysis_table[i]; i++) {
		const char *const *ids = analysis_table[i]->findings;
		for (size_t k = 0; ids && ids[k]; k++, total++) {
			CHECK(id_well_formed(ids[k]));
			for (size_t j = 0; j < k; j++)
				CHECK(strcmp(ids[j], ids[k]) != 0);
		}
	}
	CHECK(total >= 40); /* the analyses that find something declare it */
}

TEST(checked, "a finding with an undeclared id or an unknown dimension is caught, a declared "
	      "one passes")
{
	static const char *const ids[] = { "cpu.toy", NULL };
	const struct analysis_ops toy = { .name = "toy", .findings = ids };
	const struct analysis_ops silent = { .name = "silent" };
	struct findings fs = FINDINGS_INIT;
	struct strbuf why = STRBUF_INIT;
	findings_add(&fs, &(struct finding){ .id = "cpu.toy", .dimension = "cpu", .impact_s = 1 });
	CHECK(analysis_findings_check(&toy, &fs, 0, &why) == 0);
	CHECK(analysis_findings_check(&silent, &fs, 0, &why) == -1);
	CHECK(strstr(why.buf, "cpu.toy") && strstr(why.buf, "does not declare"));
	CHECK(analysis_findings_check(&silent, &fs, 1, &why) == 0); /* none added since */
	strbuf_reset(&why);
	findings_add(&fs, &(struct finding){ .id = "cpu.toy", .dimension = "gravity" });
	CHECK(analysis_findings_check(&toy, &fs, 1, &why) == -1);
	CHECK(strstr(why.buf, "fixed set") != NULL);
	CHECK(findings_dimension_known("interconnect") && !findings_dimension_known("phase"));
	findings_release(&fs);
	strbuf_release(&why);
}

CHECK_MAIN()
