// The library's small files (the tuning file, the self-check cache): written
// whole, so that a reader -- another process, a reload -- never sees half of one.
#pragma once

#include <string>

namespace tgv::detail {

// The folder part of `path` ("." for a bare name).
std::string folder_of(const std::string& path);

// mkdir -p; false if the folder does not exist afterwards.
bool make_folders(const std::string& folder);

// Writes `text` to `path` through a temporary file beside it and a rename,
// creating the folder if missing. On failure returns false, leaves no
// temporary file, and says why in `error` (if given).
bool write_file_whole(const std::string& path, const std::string& text, std::string* error = nullptr);

}  // namespace tgv::detail
