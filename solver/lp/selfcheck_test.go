package lp

import (
	"context"
	"errors"
	"testing"
)

func TestSelfCheck(t *testing.T) {
	if err := SelfCheck(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestSelfCheckHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := SelfCheck(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("SelfCheck(cancelled ctx) = %v, want an error wrapping context.Canceled", err)
	}
}
