package ort

import (
	"testing"

	"github.com/remat-compile/remat/passes/memory"
)

// TestPatternBlock replays a trace by hand: the gaps between live blocks
// are taken best-fit, the top of the block when none fits.
func TestPatternBlock(t *testing.T) {
	trace := []memory.PatternAlloc{
		// Step 0: A@0, B@100, C@130, D@210; A and C die after it, leaving
		// the gaps [0,100) and [130,210).
		{Bytes: 100, From: 0, To: 0},
		{Bytes: 30, From: 0, To: 2},
		{Bytes: 80, From: 0, To: 0},
		{Bytes: 10, From: 0, To: 2},
		// Step 1: E (70) fits both gaps and takes the tighter, [130,210);
		// F (90) then takes [0,100); G (50) fits no gap and goes on top of
		// D, at 220.
		{Bytes: 70, From: 1, To: 1},
		{Bytes: 90, From: 1, To: 2},
		{Bytes: 50, From: 1, To: 1},
		// Step 2: H (60) fits the gap E and G left, [130,210), not above.
		{Bytes: 60, From: 2, To: 2},
	}
	if got := PatternBlock(trace); got != 270 {
		t.Errorf("PatternBlock = %d, want 270", got)
	}
	if got := PatternBlock(nil); got != 0 {
		t.Errorf("PatternBlock(nil) = %d, want 0", got)
	}
}
