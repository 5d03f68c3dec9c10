package memory

// ArenaAlign is the granularity of ONNX Runtime's CPU arena (BFCArena's
// kMinAllocationSize): every buffer it hands out is a multiple of 256 bytes,
// at least 256. Options.Arena's model rounds every request to it.
const ArenaAlign = 256

// ArenaRound rounds a request of b bytes up to the arena's granularity
// (0 for none).
func ArenaRound(b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (b + ArenaAlign - 1) / ArenaAlign * ArenaAlign
}
