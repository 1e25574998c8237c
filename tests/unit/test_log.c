/* test_log: leveled messages, each with its module's prefix, one line each. */
#include "check.h"
#define LOG_DOMAIN "proc"
#include "util/log.h"

#include <fcntl.h>

/* Runs fn with stderr captured into buf. */
static void capture(void (*fn)(void), char *buf, size_t cap)
{
	fflush(stderr);
	FILE *tmp = tmpfile();
	int saved = dup(2);
	if (!tmp || saved < 0) {
		check_fail(__FILE__, __LINE__, "cannot capture stderr");
		buf[0] = '\0';
		return;
	}
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	size_t n = fread(buf, 1, cap - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
}

static void say_levels(void)
{
	log_error("cannot open %s", "profile.db");
	log_warn("disk %d%% full", 95);
	log_info("started");
	log_debug("tick");
}

TEST(default_level, "by default errors and warnings print with the module prefix, info and debug do not")
{
	char out[4096];
	log_set_level(LOG_WARN);
	capture(say_levels, out, sizeof(out));
	CHECK_CONTAINS(out, "sonde[proc]: cannot open profile.db\n");
	CHECK_CONTAINS(out, "sonde[proc]: warning: disk 95% full\n");
	CHECK_NOT_CONTAINS(out, "started");
	CHECK_NOT_CONTAINS(out, "tick");
}

TEST(verbose_levels, "with -v info prints, with -vv debug prints too")
{
	char out[4096];
	log_set_level(LOG_INFO);
	capture(say_levels, out, sizeof(out));
	CHECK_CONTAINS(out, "sonde[proc]: started\n");
	CHECK_NOT_CONTAINS(out, "tick");
	log_set_level(LOG_DEBUG);
	CHECK_INT_EQ(log_get_level(), LOG_DEBUG);
	capture(say_levels, out, sizeof(out));
	CHECK_CONTAINS(out, "sonde[proc]: tick\n");
	log_set_level(LOG_WARN);
}

static void say_plain(void)
{
	log_msg(LOG_ERROR, "sonde", "usage: sonde run -- COMMAND");
}

TEST(plain_domain, "the top-level domain prints as plain \"sonde:\"")
{
	char out[512];
	capture(say_plain, out, sizeof(out));
	CHECK_STR_EQ(out, "sonde: usage: sonde run -- COMMAND\n");
}

static void say_long(void)
{
	char big[6000];
	memset(big, 'L', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_warn("%s", big);
}

TEST(long_message, "a very long message is cut, still one line with its prefix")
{
	char out[16384];
	capture(say_long, out, sizeof(out));
	CHECK(!strncmp(out, "sonde[proc]: warning: LLL", 25));
	CHECK_INT_EQ(strchr(out, '\n') - out + 1, (long long)strlen(out));
	CHECK(strlen(out) < 6000);
}

CHECK_MAIN()
