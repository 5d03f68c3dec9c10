package measure

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

// cacheDir is a fake sysfs cache directory: one index per entry, each
// with the files given ("" content leaves a file out).
func cacheDir(indexes ...map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for i, files := range indexes {
		for name, content := range files {
			if content != "" {
				fsys[("index"+string(rune('0'+i)))+"/"+name] = &fstest.MapFile{Data: []byte(content + "\n")}
			}
		}
	}
	return fsys
}

func cache(level, typ, size, cpus string) map[string]string {
	return map[string]string{"level": level, "type": typ, "size": size, "shared_cpu_list": cpus}
}

func TestCachesFromSysfs(t *testing.T) {
	l1d, l1i := cache("1", "Data", "32K", "0"), cache("1", "Instruction", "32K", "0")
	for _, tc := range []struct {
		name       string
		fsys       fstest.MapFS
		l2, l3     int64
		l2c, l3c   int
		wantSource []string // substrings of Source
	}{
		{"this machine", cacheDir(l1d, l1i, cache("2", "Unified", "1024K", "0"), cache("3", "Unified", "32768K", "0-1")),
			1 << 20, 32 << 20, 1, 2, []string{"from /fake"}},
		{"units", cacheDir(cache("2", "Unified", "2048K", "0-1"), cache("3", "Unified", "32M", "0-7,16-23")),
			2 << 20, 32 << 20, 2, 16, []string{"from /fake"}},
		{"data caches, instruction ignored", cacheDir(cache("2", "Instruction", "8M", "0"), cache("2", "Data", "512K", "0"), cache("3", "Data", "16M", "")),
			512 << 10, 16 << 20, 1, 0, []string{"from /fake"}},
		{"no L3", cacheDir(l1d, cache("2", "Unified", "1M", "0")),
			1 << 20, DefaultL3Bytes, 1, 0, []string{"L3: built-in default", "no data or unified cache of that level"}},
		{"missing size", cacheDir(map[string]string{"level": "2", "type": "Unified"}, cache("3", "Unified", "32M", "0")),
			DefaultL2Bytes, 32 << 20, 0, 1, []string{"L2: built-in default", "index0: open index0/size"}},
		{"bad size and level", cacheDir(cache("2", "Unified", "lots", "0"), cache("three", "Unified", "32M", "0")),
			DefaultL2Bytes, DefaultL3Bytes, 0, 0, []string{"L2 and L3: built-in default", `cache size "lots"`, `level "three" is not a number`}},
		{"L2 larger than the default L3", cacheDir(cache("2", "Unified", "64M", "0")),
			64 << 20, 64 << 20, 1, 0, []string{"L3: built-in default"}},
		{"no directory", fstest.MapFS{}, DefaultL2Bytes, DefaultL3Bytes, 0, 0, []string{"L2 and L3: built-in default"}},
	} {
		c := cachesFrom(tc.fsys, "/fake")
		if c.L2Bytes != tc.l2 || c.L3Bytes != tc.l3 || c.L2CPUs != tc.l2c || c.L3CPUs != tc.l3c {
			t.Errorf("%s: L2 %d (%d CPUs), L3 %d (%d CPUs); want %d (%d), %d (%d)", tc.name, c.L2Bytes, c.L2CPUs, c.L3Bytes, c.L3CPUs, tc.l2, tc.l2c, tc.l3, tc.l3c)
		}
		for _, want := range tc.wantSource {
			if !strings.Contains(c.Source, want) {
				t.Errorf("%s: source %q lacks %q", tc.name, c.Source, want)
			}
		}
		if err := c.check(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestMachineCachesAbsent(t *testing.T) {
	c := cachesFrom(os.DirFS("/nonexistent"), "/nonexistent")
	if c.L2Bytes != DefaultL2Bytes || c.L3Bytes != DefaultL3Bytes || !strings.HasPrefix(c.Source, "built-in defaults: /nonexistent: ") {
		t.Errorf("no sysfs: %+v", c)
	}
	// The machine's own: whatever it has, the sizes form a hierarchy
	// and say where they come from.
	m := MachineCaches()
	if err := m.check(); err != nil || m.Source == "" {
		t.Errorf("MachineCaches: %+v, %v", m, err)
	}
	if s := (CacheSizes{L2Bytes: 1 << 20, L3Bytes: 32 << 20, L2CPUs: 1, L3CPUs: 2, Source: "from /sys"}).String(); s != "L2 1.00 MiB (1 CPU), L3 32.0 MiB (2 CPUs), from /sys" {
		t.Errorf("String: %q", s)
	}
}

func TestParseCacheSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"2048K", 2 << 20}, {"32M", 32 << 20}, {"1G", 1 << 30}, {"512", 512}, {" 48K\n", 48 << 10},
		{"2MiB", 2 << 20}, {"512KiB", 512 << 10}, {"64B", 64},
		{"", -1}, {"K", -1}, {"0K", -1}, {"-1M", -1}, {"1.5M", -1}, {"2T", -1}, {"99999999999G", -1},
	} {
		got, err := ParseCacheSize(tc.in)
		switch {
		case tc.want < 0 && err == nil:
			t.Errorf("%q: %d, want an error", tc.in, got)
		case tc.want >= 0 && (err != nil || got != tc.want):
			t.Errorf("%q: %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestCountCPUs(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-1": 2, "0,2-3": 3, "0-7,16-23": 16, "": 0, "3-1": 0, "a": 0} {
		if got := countCPUs(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}
