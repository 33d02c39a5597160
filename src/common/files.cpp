#include "common/files.hpp"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace tgv::detail {

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool make_folders(const std::string& folder) {
  for (size_t at = 1; at <= folder.size(); ++at) {
    if (at != folder.size() && folder[at] != '/') continue;
    const std::string prefix = folder.substr(0, at);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st {};
  return stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool write_file_whole(const std::string& path, const std::string& text, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error != nullptr) *error = why;
    return false;
  };
  const std::string folder = folder_of(path);
  if (!make_folders(folder)) return fail("cannot create the folder " + folder + ": " + std::strerror(errno));
  // The process id keeps two processes writing the same file off each other's temporary.
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  std::ofstream out(temp, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::remove(temp.c_str());
    return fail("cannot write " + temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(temp.c_str());
    return fail("cannot rename " + temp + " to " + path + ": " + std::strerror(e));
  }
  return true;
}

}  // namespace tgv::detail
