package bracketdepth

import "testing"

func TestMaxDepth(t *testing.T) {
	for _, tc := range depthCases {
		t.Run(tc.description, func(t *testing.T) {
			got, err := MaxDepth(tc.text)
			if err != nil {
				t.Fatalf("MaxDepth(%q) returned error %v, want %d", tc.text, err, tc.depth)
			}
			if got != tc.depth {
				t.Fatalf("MaxDepth(%q) = %d, want %d", tc.text, got, tc.depth)
			}
		})
	}
}

func TestUnbalanced(t *testing.T) {
	for _, tc := range unbalancedCases {
		t.Run(tc.description, func(t *testing.T) {
			if _, err := MaxDepth(tc.text); err == nil {
				t.Fatalf("MaxDepth(%q) returned no error", tc.text)
			}
		})
	}
}
