/* frame_render: a batch renderer written the way such tools often are: each
 * frame gets a fresh, zeroed canvas (calloc of 256 MiB, so glibc maps new
 * pages every time), a few shapes are drawn on it, and a checksum goes to
 * stdout. Most of its time is the kernel faulting in and zeroing the fresh
 * pages, not the drawing: the cause is new_canvas() allocating per frame.
 * argv[1]: frames (default 6); argv[2]: canvas MiB (default 256). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct canvas {
	uint32_t *px;
	size_t w, h;
};

__attribute__((noinline)) static struct canvas new_canvas(size_t mib)
{
	struct canvas c = { NULL, 4096, mib * 1024 * 1024 / 4 / 4096 };
	c.px = malloc(c.w * c.h * sizeof(*c.px));
	if (!c.px) {
		perror("frame_render: malloc");
		exit(1);
	}
	memset(c.px, 0x20, c.w * c.h * sizeof(*c.px)); /* a dark grey background */
	return c;
}

__attribute__((noinline)) static void draw_rect(struct canvas *c, size_t x0, size_t y0,
						size_t w, size_t h, uint32_t rgba)
{
	for (size_t y = y0; y < y0 + h && y < c->h; y++)
		for (size_t x = x0; x < x0 + w && x < c->w; x++)
			c->px[y * c->w + x] = rgba;
}

__attribute__((noinline)) static uint64_t checksum(const struct canvas *c)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < c->w * c->h; i += 64)
		sum = sum * 31 + c->px[i];
	return sum;
}

static uint64_t render_frame(int frame, size_t mib)
{
	struct canvas c = new_canvas(mib);
	for (int s = 0; s < 8; s++)
		draw_rect(&c, (size_t)(frame * 37 + s * 101) % c.w, (size_t)(s * 211) % c.h, 64,
			  64, 0xff000000u | (uint32_t)(frame * 8 + s));
	uint64_t sum = checksum(&c);
	free(c.px);
	return sum;
}

int main(int argc, char **argv)
{
	int frames = argc > 1 ? atoi(argv[1]) : 6;
	size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 256;
	for (int f = 0; f < frames; f++)
		printf("frame %d: %016llx\n", f, (unsigned long long)render_frame(f, mib));
	return 0;
}
