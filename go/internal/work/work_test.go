package work

import (
	"testing"

	"lab/go/internal/contract"
)

// The vectors come from contract/cpu-vectors.json, found by walking up from the test's directory.
func TestFNV1aVectors(t *testing.T) {
	vectors, err := contract.MustLoad().CPUVectors()
	if err != nil {
		t.Fatal(err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vectors {
		if got := FNV1a(v.N); got != v.Result {
			t.Errorf("FNV1a(%d) = %d, want %d", v.N, got, v.Result)
		}
	}
}

func BenchmarkFNV1a(b *testing.B) {
	for b.Loop() {
		FNV1a(1_000_000)
	}
}
