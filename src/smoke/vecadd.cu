// nodeprov GPU smoke test: the smallest kernel that proves nvcc output runs.
#include <cstdio>

__global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  float *ha = new float[n], *hb = new float[n], *hc = new float[n];
  for (int i = 0; i < n; i++) {
    ha[i] = (float)i;
    hb[i] = 2.0f * i;
  }
  float *a, *b, *c;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMalloc(&c, bytes);
  cudaMemcpy(a, ha, bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(b, hb, bytes, cudaMemcpyHostToDevice);
  add<<<(n + 255) / 256, 256>>>(a, b, c, n);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaMemcpy(hc, c, bytes, cudaMemcpyDeviceToHost);
  int bad = 0;
  // Sums stay below 2^24, so every expected value is exact in float.
  for (int i = 0; i < n; i++) bad += hc[i] != 3.0f * i;
  printf("vecadd err=%s bad=%d\n", cudaGetErrorString(err), bad);
  return err == cudaSuccess && bad == 0 ? 0 : 1;
}
