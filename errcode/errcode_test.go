package errcode_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hilodb/hilodb/errcode"
)

func TestCodesAreUnique(t *testing.T) {
	names, nums := map[string]bool{}, map[int]string{}
	for _, c := range errcode.All {
		if c.Name == "" || c.Num == 0 || c.Status < 400 || c.Status > 599 || c.Text == "" {
			t.Errorf("incomplete code %+v", c)
		}
		if names[c.Name] {
			t.Errorf("code %s twice", c.Name)
		}
		names[c.Name] = true
		if other, dup := nums[c.Num]; dup {
			t.Errorf("%s and %s share the number %d", other, c.Name, c.Num)
		}
		nums[c.Num] = c.Name
		if got, ok := errcode.ByNum(c.Num); !ok || got != c {
			t.Errorf("ByNum(%d) = %+v", c.Num, got)
		}
		if got, ok := errcode.ByName(c.Name); !ok || got != c {
			t.Errorf("ByName(%s) = %+v", c.Name, got)
		}
	}
}

// dtsBlock is what js/index.d.ts holds between its errcode markers.
func dtsBlock() string {
	var b strings.Builder
	b.WriteString("/**\n * Every error code, with its number and HTTP-style status.\n *\n")
	for _, c := range errcode.All {
		fmt.Fprintf(&b, " * - `%s` (%d, %d): %s\n", c.Name, c.Num, c.Status, c.Text)
	}
	b.WriteString(" */\nexport type ErrorCode =\n")
	for i, c := range errcode.All {
		fmt.Fprintf(&b, "  | '%s'", c.Name)
		if i == len(errcode.All)-1 {
			b.WriteString(";")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// mdBlock is what docs/protocol.md holds between its errcode markers.
func mdBlock() string {
	var b strings.Builder
	b.WriteString("| code | num | status | meaning |\n|---|---|---|---|\n")
	for _, c := range errcode.All {
		fmt.Fprintf(&b, "| `%s` | %d | %d | %s |\n", c.Name, c.Num, c.Status, c.Text)
	}
	return b.String()
}

// between returns the text of path between the lines holding begin and end.
func between(t *testing.T, path, begin, end string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q … %q block", path, begin, end)
	}
	i += strings.Index(s[i:], "\n") + 1
	return s[i:j]
}

// TestDocumentedCodes checks that the npm package's declarations and the
// protocol docs list exactly the registry. On a mismatch it prints the block
// to paste.
func TestDocumentedCodes(t *testing.T) {
	for _, f := range []struct{ path, begin, end, want string }{
		{"../js/index.d.ts", "// errcode:begin", "// errcode:end", dtsBlock()},
		{"../docs/protocol.md", "<!-- errcode:begin -->", "<!-- errcode:end -->", mdBlock()},
	} {
		if got := between(t, f.path, f.begin, f.end); got != f.want {
			t.Errorf("%s is out of date with package errcode; between its markers put:\n%s", f.path, f.want)
		}
	}
}

// TestJavaScriptCodes checks that every code the JavaScript sources make
// (hiloError('code', num, …), {code: 'x', num: n}, and the edge glue's
// errorResponse(status, "code", num, …)) is in the registry
// with that number.
func TestJavaScriptCodes(t *testing.T) {
	re := regexp.MustCompile(`(?:[hH]iloError\('([a-z_]+)', (\d+)|code: '([a-z_]+)', num: (\d+)|errorResponse\(\d+, "([a-z_]+)", (\d+))`)
	paths, err := filepath.Glob("../js/*.js")
	if err != nil || len(paths) < 5 {
		t.Fatalf("the npm package's sources: %v %v", paths, err)
	}
	found := 0
	for _, path := range append(paths, "../edge/worker.mjs") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			found++
			name, num := m[1]+m[3]+m[5], m[2]+m[4]+m[6]
			n, _ := strconv.Atoi(num)
			c, ok := errcode.ByName(name)
			if !ok || c.Num != n {
				t.Errorf("%s makes %s %d; the registry has %+v", path, name, n, c)
			}
		}
	}
	if found < 50 {
		t.Errorf("only %d codes found in the JavaScript sources: is the pattern still right?", found)
	}
}
