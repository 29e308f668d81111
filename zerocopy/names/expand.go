package names

import "strings"

// ExpandTopicName turns a topic or service name as written by a user into a
// fully qualified name, with the rules of rcl_expand_topic_name (without
// user-defined substitutions, of which rcl has none by default):
//
//   - name must pass ValidateTopicName, nodeName ValidateNodeName and
//     nodeNamespace ValidateNamespace;
//   - an absolute name without substitutions is returned as is;
//   - a leading "~" is replaced by the node's fully qualified name
//     (nodeNamespace + "/" + nodeName, without doubling the root "/");
//   - every "{node}" is replaced by nodeName, every "{ns}" and "{namespace}"
//     by nodeNamespace; any other "{...}" is an unknown substitution;
//   - a name that is still relative gets nodeNamespace + "/" prepended.
//
// The result is then checked with ValidateFullTopicName, as rcl does before
// using a name, so e.g. "{ns}/x" in the root namespace ("//x") is an error.
//
// Errors are *Error values matching ErrInvalidName; their Kind says which
// argument was at fault, and Name is the expanded name if only that is
// invalid.
func ExpandTopicName(name, nodeName, nodeNamespace string) (string, error) {
	if err := ValidateTopicName(name); err != nil {
		return "", err
	}
	if err := ValidateNodeName(nodeName); err != nil {
		return "", err
	}
	if err := ValidateNamespace(nodeNamespace); err != nil {
		return "", err
	}

	// prefix joins the namespace with what follows; the root namespace
	// already ends in '/'.
	prefix := nodeNamespace + "/"
	if nodeNamespace == "/" {
		prefix = "/"
	}

	out := name
	if strings.HasPrefix(out, "~") {
		out = prefix + nodeName + out[1:]
	}
	// Validation guarantees balanced, non-nested braces; replacements
	// contain no braces, so every round removes one kind of substitution.
	for {
		open := strings.IndexByte(out, '{')
		if open < 0 {
			break
		}
		end := open + strings.IndexByte(out[open:], '}')
		sub := out[open : end+1]
		var repl string
		switch sub {
		case "{node}":
			repl = nodeName
		case "{ns}", "{namespace}":
			repl = nodeNamespace
		default:
			return "", newError(kindTopic, name, strings.Index(name, sub), "unknown substitution %q", sub)
		}
		out = strings.ReplaceAll(out, sub, repl)
	}
	if !strings.HasPrefix(out, "/") {
		out = prefix + out
	}
	if err := ValidateFullTopicName(out); err != nil {
		return "", err
	}
	return out, nil
}
