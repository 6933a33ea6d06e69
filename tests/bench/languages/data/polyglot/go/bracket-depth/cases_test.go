package bracketdepth

var depthCases = []struct {
	description string
	text        string
	depth       int
}{
	{"empty text", "", 0},
	{"one pair", "()", 1},
	{"pairs side by side", "()[]{}", 1},
	{"nested three deep", "{[()]}", 3},
	{"other characters ignored", "f(a[i], g(x))", 2},
}

var unbalancedCases = []struct {
	description string
	text        string
}{
	{"closing without opening", ")"},
	{"wrong closing bracket", "(]"},
	{"left open", "(()"},
}
