package diagnose

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoComputesOnce(t *testing.T) {
	var m memo[int, *int]
	var calls atomic.Int64
	const goroutines, keys = 8, 5
	got := make([][keys]*int, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for k := range keys {
				got[g][k] = m.get(k, func() *int {
					calls.Add(1)
					v := k * 10
					return &v
				})
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, keys, calls.Load(), "one computation per key")
	for g := range goroutines {
		for k := range keys {
			require.Same(t, got[0][k], got[g][k], "every caller gets the same value")
			require.Equal(t, k*10, *got[g][k])
		}
	}
}

func TestMemoPeekAndAdd(t *testing.T) {
	var m memo[string, int]
	_, ok := m.peek("a")
	require.False(t, ok, "nothing computed yet")
	m.add("a", 1)
	v, ok := m.peek("a")
	require.True(t, ok)
	require.Equal(t, 1, v)
	m.add("a", 2) // a value once set stays
	require.Equal(t, 1, m.get("a", func() int { return 3 }))
	require.Equal(t, 4, m.get("b", func() int { return 4 }))
	v, ok = m.peek("b")
	require.True(t, ok)
	require.Equal(t, 4, v)
}
