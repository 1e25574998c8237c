/* lock_sleep: a small C service whose worker threads look prices up in a
 * shared table; the table refreshes a stale entry while holding its mutex,
 * and the refresh calls a slow backend (a sleep standing for the network),
 * so every other worker waits for the mutex in table_lookup. With "fixed"
 * the refresh fetches before taking the mutex and only swaps under it.
 *
 * usage: lock_sleep [SECONDS] [fixed] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NWORKERS 4
#define TTL_NS 50000000LL

struct table {
	pthread_mutex_t lock;
	double prices[3];
	long long loaded_ns;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noipa)) static void backend_fetch(double *out)
{
	usleep(40000); /* the network */
	for (int i = 0; i < 3; i++)
		out[i] = 1.5 * (i + 1);
}

__attribute__((noipa)) static double table_lookup(struct table *t, int k, int fixed)
{
	double v;
	if (fixed) {
		if (now_ns() - t->loaded_ns > TTL_NS) {
			double fresh[3];
			backend_fetch(fresh);
			pthread_mutex_lock(&t->lock);
			memcpy(t->prices, fresh, sizeof(fresh));
			t->loaded_ns = now_ns();
			pthread_mutex_unlock(&t->lock);
		}
		pthread_mutex_lock(&t->lock);
		v = t->prices[k];
		pthread_mutex_unlock(&t->lock);
		return v;
	}
	pthread_mutex_lock(&t->lock);
	if (now_ns() - t->loaded_ns > TTL_NS) {
		backend_fetch(t->prices);
		t->loaded_ns = now_ns();
	}
	v = t->prices[k];
	pthread_mutex_unlock(&t->lock);
	return v;
}

struct job {
	struct table *t;
	long long until_ns;
	int fixed;
	double sum;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	while (now_ns() < j->until_ns) {
		j->sum += table_lookup(j->t, 1, j->fixed);
		for (volatile int i = 0; i < 20000; i++) /* the rest of the request */
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	int fixed = argc > 2 && !strcmp(argv[2], "fixed");
	struct table t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct job jobs[NWORKERS];
	pthread_t th[NWORKERS];
	for (int i = 0; i < NWORKERS; i++) {
		jobs[i] = (struct job){ &t, now_ns() + (long long)(seconds * 1e9), fixed, 0 };
		if (pthread_create(&th[i], NULL, worker, &jobs[i]))
			return 1;
	}
	double sum = 0;
	for (int i = 0; i < NWORKERS; i++) {
		pthread_join(th[i], NULL);
		sum += jobs[i].sum;
	}
	printf("lock_sleep: %.1f\n", sum);
	return 0;
}
