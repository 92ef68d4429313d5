package naming

import "strings"

// irregularPlurals maps lower-case singular nouns to their plurals.
var irregularPlurals = map[string]string{
	"person": "people", "man": "men", "woman": "women", "child": "children",
	"mouse": "mice", "goose": "geese", "tooth": "teeth", "foot": "feet",
	"ox": "oxen", "leaf": "leaves", "knife": "knives", "life": "lives",
	"wife": "wives", "half": "halves", "wolf": "wolves", "shelf": "shelves",
	"calf": "calves", "loaf": "loaves", "thief": "thieves", "hero": "heroes",
	"potato": "potatoes", "tomato": "tomatoes", "echo": "echoes",
	"criterion": "criteria", "datum": "data", "medium": "media",
	"index": "indices", "matrix": "matrices", "vertex": "vertices",
	"quiz": "quizzes", "status": "statuses", "bus": "buses", "alias": "aliases",
}

// uncountables are nouns whose plural is the noun itself.
var uncountables = map[string]bool{
	"equipment": true, "information": true, "rice": true, "money": true,
	"species": true, "series": true, "fish": true, "sheep": true, "deer": true,
	"news": true, "data": true, "metadata": true, "feedback": true,
	"software": true, "hardware": true, "staff": true, "aircraft": true,
}

// Pluralize returns the English plural of a type name, the default
// collection name for a type: "Order" → "Orders", "Category" →
// "Categories", "Address" → "Addresses", "Person" → "People". Only the last
// word of a CamelCase name changes ("LineItem" → "LineItems"), and the case
// of its first letter is kept.
func Pluralize(name string) string {
	if name == "" {
		return name
	}
	// Split off the last CamelCase word.
	start := 0
	for i := len(name) - 1; i > 0; i-- {
		if c := name[i]; c >= 'A' && c <= 'Z' {
			start = i
			break
		}
	}
	head, word := name[:start], name[start:]
	lower := strings.ToLower(word)
	if uncountables[lower] {
		return name
	}
	if p, ok := irregularPlurals[lower]; ok {
		return head + matchCase(word, p)
	}
	n := len(lower)
	switch {
	case n >= 2 && lower[n-1] == 'y' && !isVowel(lower[n-2]):
		return head + word[:len(word)-1] + "ies"
	case strings.HasSuffix(lower, "is") && n > 3:
		return head + word[:len(word)-2] + "es" // analysis → analyses
	case strings.HasSuffix(lower, "s"), strings.HasSuffix(lower, "x"),
		strings.HasSuffix(lower, "z"), strings.HasSuffix(lower, "ch"),
		strings.HasSuffix(lower, "sh"):
		return head + word + "es"
	}
	return head + word + "s"
}

func isVowel(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }

// matchCase gives plural the case of word's first letter, or all upper case
// when word is all upper case.
func matchCase(word, plural string) string {
	if len(word) > 1 && strings.ToUpper(word) == word {
		return strings.ToUpper(plural)
	}
	if word[0] >= 'A' && word[0] <= 'Z' {
		return strings.ToUpper(plural[:1]) + plural[1:]
	}
	return plural
}
