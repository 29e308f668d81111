package msgparse

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// parseDefault parses the default value of field f (a primitive field,
// possibly an array) into the Go type schema.Struct uses for it.
func parseDefault(f *schema.Field, s string) (any, error) {
	if !f.IsArray {
		return parseScalar(f, s)
	}
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("an array value must start with '[' and end with ']'")
	}
	inner := strings.TrimSpace(s[1 : len(s)-1])
	var elems []string
	if f.Type == schema.TypeString || f.Type == schema.TypeWString {
		var err error
		if elems, err = splitStringArray(inner); err != nil {
			return nil, err
		}
	} else if inner != "" {
		elems = strings.Split(inner, ",")
	}
	switch {
	case f.IsFixedArray() && len(elems) != f.ArraySize:
		return nil, fmt.Errorf("array must have exactly %d elements, not %d", f.ArraySize, len(elems))
	case f.IsUpperBound && len(elems) > f.ArraySize:
		return nil, fmt.Errorf("sequence must have at most %d elements, not %d", f.ArraySize, len(elems))
	}
	vals := make([]any, len(elems))
	for i, e := range elems {
		v, err := parseScalar(f, strings.TrimSpace(e))
		if err != nil {
			return nil, fmt.Errorf("element %d: %v", i, err)
		}
		vals[i] = v
	}
	return fillSlice(f.Type, vals), nil
}

// fillSlice returns vals as the slice type schema.Struct uses for t.
func fillSlice(t schema.TypeID, vals []any) any {
	switch t {
	case schema.TypeBoolean:
		return conv[bool](vals)
	case schema.TypeOctet, schema.TypeUint8, schema.TypeChar:
		return conv[uint8](vals)
	case schema.TypeInt8:
		return conv[int8](vals)
	case schema.TypeUint16, schema.TypeWchar:
		return conv[uint16](vals)
	case schema.TypeInt16:
		return conv[int16](vals)
	case schema.TypeUint32:
		return conv[uint32](vals)
	case schema.TypeInt32:
		return conv[int32](vals)
	case schema.TypeUint64:
		return conv[uint64](vals)
	case schema.TypeInt64:
		return conv[int64](vals)
	case schema.TypeFloat:
		return conv[float32](vals)
	case schema.TypeDouble:
		return conv[float64](vals)
	case schema.TypeString, schema.TypeWString:
		return conv[string](vals)
	}
	return nil
}

func conv[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

// splitStringArray splits the inside of a string array value at commas
// that are outside quotes; quoted elements lose their quotes and the
// escaping of their quote character.
func splitStringArray(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return out, nil
		}
		if s[0] == ',' {
			return nil, fmt.Errorf("unexpected ',' in string array")
		}
		if q := s[0]; q == '"' || q == '\'' {
			end := -1
			for i := 1; i < len(s); i++ {
				if s[i] == '\\' {
					i++
					continue
				}
				if s[i] == q {
					end = i
					break
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("unterminated quoted string in array")
			}
			out = append(out, s[:end+1]) // parseScalar unquotes it
			s = strings.TrimLeft(s[end+1:], " ")
			if s != "" && s[0] != ',' {
				return nil, fmt.Errorf("expected ',' after quoted string, got %q", s)
			}
		} else {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				out = append(out, strings.TrimSpace(s))
				return out, nil
			}
			out = append(out, strings.TrimSpace(s[:i]))
			s = s[i:]
		}
		if s != "" {
			s = s[1:] // the comma
			if strings.TrimSpace(s) == "" {
				return nil, fmt.Errorf("trailing ',' in string array")
			}
		}
	}
}

// parseScalar parses one primitive value for the (element) type of f, with
// rosidl's rules: bool is true/false/1/0 in any case; integers are decimal
// or carry a 0x/0o/0b prefix and must fit the type (byte and char:
// 0…255); floats use '.' (inf and nan allowed); strings may be enclosed in
// matching single or double quotes, inside which that quote must be
// escaped with a backslash, and must respect the string bound.
func parseScalar(f *schema.Field, s string) (any, error) {
	if s == "" {
		return nil, fmt.Errorf("empty value")
	}
	switch f.Type {
	case schema.TypeBoolean:
		switch strings.ToLower(s) {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("a bool must be true, false, 1 or 0")
	case schema.TypeFloat, schema.TypeDouble:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return nil, fmt.Errorf("not a floating point number")
		}
		if f.Type == schema.TypeFloat {
			if !math.IsInf(x, 0) && !math.IsNaN(x) && math.Abs(x) > math.MaxFloat32 {
				return nil, fmt.Errorf("out of range for float32")
			}
			return float32(x), nil
		}
		if math.IsInf(x, 0) && !strings.Contains(strings.ToLower(s), "inf") {
			return nil, fmt.Errorf("out of range for float64")
		}
		return x, nil
	case schema.TypeString, schema.TypeWString:
		v, err := unquote(s)
		if err != nil {
			return nil, err
		}
		n, unit := len(v), "bytes"
		if f.Type == schema.TypeWString {
			n, unit = len(utf16.Encode([]rune(v))), "UTF-16 units"
		}
		if f.StringUpperBound > 0 && n > f.StringUpperBound {
			return nil, fmt.Errorf("string of %d %s exceeds the bound %d", n, unit, f.StringUpperBound)
		}
		return v, nil
	}
	lo, hi, ok := intRange(f.Type)
	if !ok {
		return nil, fmt.Errorf("type %s cannot have a literal value", f.Type)
	}
	n, ok := parseInt(s)
	if !ok {
		return nil, fmt.Errorf("not an integer")
	}
	if n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return nil, fmt.Errorf("out of range for %s (%v…%v)", f.Type, lo, hi)
	}
	switch f.Type {
	case schema.TypeOctet, schema.TypeUint8, schema.TypeChar:
		return uint8(n.Uint64()), nil
	case schema.TypeUint16, schema.TypeWchar:
		return uint16(n.Uint64()), nil
	case schema.TypeUint32:
		return uint32(n.Uint64()), nil
	case schema.TypeUint64:
		return n.Uint64(), nil
	case schema.TypeInt8:
		return int8(n.Int64()), nil
	case schema.TypeInt16:
		return int16(n.Int64()), nil
	case schema.TypeInt32:
		return int32(n.Int64()), nil
	default:
		return n.Int64(), nil
	}
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func intRange(t schema.TypeID) (lo, hi *big.Int, ok bool) {
	bits, signed := 0, false
	switch t {
	case schema.TypeOctet, schema.TypeUint8, schema.TypeChar:
		bits = 8
	case schema.TypeUint16, schema.TypeWchar:
		bits = 16
	case schema.TypeUint32:
		bits = 32
	case schema.TypeUint64:
		bits = 64
	case schema.TypeInt8:
		bits, signed = 8, true
	case schema.TypeInt16:
		bits, signed = 16, true
	case schema.TypeInt32:
		bits, signed = 32, true
	case schema.TypeInt64:
		bits, signed = 64, true
	default:
		return nil, nil, false
	}
	one := big.NewInt(1)
	if signed {
		hi = new(big.Int).Sub(new(big.Int).Lsh(one, uint(bits-1)), one)
		lo = new(big.Int).Neg(new(big.Int).Lsh(one, uint(bits-1)))
	} else {
		hi = new(big.Int).Sub(new(big.Int).Lsh(one, uint(bits)), one)
		lo = new(big.Int)
	}
	return lo, hi, true
}

// parseInt accepts a decimal integer or one with a 0x, 0o or 0b prefix,
// optionally signed.
func parseInt(s string) (*big.Int, bool) {
	n, ok := new(big.Int).SetString(s, 10)
	if ok {
		return n, true
	}
	body := strings.TrimLeft(s, "+-")
	if len(body) < 3 || body[0] != '0' || !strings.ContainsRune("xXoObB", rune(body[1])) {
		return nil, false
	}
	return new(big.Int).SetString(s, 0)
}

// unquote removes matching outer quotes (' or ") and the backslash before
// an escaped inner quote of the same kind; an unescaped inner quote of that
// kind is an error. Unquoted text is taken as it is.
func unquote(s string) (string, error) {
	if len(s) < 2 {
		return s, nil
	}
	q := s[0]
	if (q != '"' && q != '\'') || s[len(s)-1] != q {
		return s, nil
	}
	inner := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c == '\\' && i+1 < len(inner) && inner[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		if c == q {
			return "", fmt.Errorf("unescaped %c inside a %c-quoted string", q, q)
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}
