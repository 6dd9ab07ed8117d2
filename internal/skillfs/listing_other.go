//go:build !linux

package skillfs

// noParent makes listing.read open its folder by its path, which is how
// every folder is read on this system.
const noParent = -1

// openParent returns noParent: folders are read by path here.
func openParent(string) (parent int, closeParent func()) { return noParent, func() {} }

// read reads the folder real into l: its entries and, when one of them is
// a regular SKILL.md, its stat and the folder's resources. Folders have no
// stamp here, so no listing is recorded or used. It touches no walker
// state, so folders can be read ahead on other goroutines.
func (l *listing) read(_ int, _, real string, maxResources int, _ *folderListing) {
	l.readPath(real, maxResources)
}
