// cuda_vector: the GPU check's CUDA program (check_cuda_agent.sh; never built
// by CMake): allocations, copies both ways (pageable and pinned), a memset,
// kernels on two streams, event and stream syncs; prints the CLOCK_MONOTONIC
// window around the work, so that the agent's clock can be checked.
#include <cstdio>
#include <ctime>
#include <cuda_runtime.h>

__global__ void vec_add(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

static long long mono_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main()
{
	long long t0 = mono_ns(); /* before the first CUDA call: all records after it */
	const int n = 1 << 22;
	size_t bytes = n * sizeof(float);
	float *h = (float *)malloc(bytes), *hp, *a, *b, *c;
	for (int i = 0; i < n; i++)
		h[i] = (float)i;
	cudaFree(0);
	cudaMallocHost(&hp, bytes);
	cudaMalloc(&a, bytes);
	cudaMalloc(&b, bytes);
	cudaMalloc(&c, bytes);
	cudaMemcpy(a, h, bytes, cudaMemcpyHostToDevice);
	cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice);
	cudaMemset(c, 0, bytes);
	cudaStream_t s1, s2;
	cudaStreamCreate(&s1);
	cudaStreamCreate(&s2);
	for (int k = 0; k < 10; k++) {
		vec_add<<<(n + 255) / 256, 256, 0, k % 2 ? s1 : s2>>>(a, b, c, n);
	}
	cudaStreamSynchronize(s1);
	cudaEvent_t ev;
	cudaEventCreate(&ev);
	cudaEventRecord(ev, s2);
	cudaEventSynchronize(ev);
	cudaMemcpyAsync(hp, c, bytes, cudaMemcpyDeviceToHost, s1);
	cudaDeviceSynchronize();
	cudaMemcpy(h, c, bytes, cudaMemcpyDeviceToHost);
	cudaFree(a);
	cudaFree(b);
	cudaFree(c);
	cudaFreeHost(hp);
	const char *err = cudaGetErrorString(cudaGetLastError());
	long long t1 = mono_ns(); /* after the last CUDA call */
	printf("window %lld %lld check %g err %s\n", t0, t1, h[100], err);
	return h[100] == 200.0f ? 0 : 1;
}
