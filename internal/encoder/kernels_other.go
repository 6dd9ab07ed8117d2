//go:build !amd64

package encoder

// bestKernels returns the portable kernels: only amd64 has assembly ones.
func bestKernels() kernels { return portableKernels }

// kernelSets returns the kernel sets this CPU runs.
func kernelSets() []kernels { return []kernels{portableKernels} }
