package names

import "strings"

// FullNodeName is the fully qualified name of node name in namespace ns
// ("/" + name in the root namespace; ns "" counts as the root).
func FullNodeName(name, ns string) string {
	if ns == "/" || ns == "" {
		return "/" + name
	}
	return ns + "/" + name
}

// SplitFullNodeName splits a fully qualified node name into its name and
// namespace; it is the inverse of FullNodeName.
func SplitFullNodeName(fq string) (name, ns string) {
	i := strings.LastIndexByte(fq, '/')
	if i <= 0 {
		return fq[i+1:], "/"
	}
	return fq[i+1:], fq[:i]
}
