#include "cli/convert/image_folder.h"

#include <algorithm>
#include <map>

#include "cli/commands/locations.h"
#include "spool/core/strings.h"
#include "spool/records/example.h"

namespace spool::cli {

std::string ImageFormatOf(std::string_view key) {
  size_t dot = key.rfind('.');
  if (dot == std::string_view::npos || key.find('/', dot) != std::string_view::npos) return "";
  const std::string extension = AsciiToLower(key.substr(dot + 1));
  static const std::map<std::string, std::string> kFormats = {
      {"jpg", "JPEG"}, {"jpeg", "JPEG"}, {"png", "PNG"},   {"gif", "GIF"},
      {"bmp", "BMP"},  {"webp", "WEBP"}, {"tif", "TIFF"},  {"tiff", "TIFF"}};
  auto it = kFormats.find(extension);
  return it == kFormats.end() ? "" : it->second;
}

Result<std::unique_ptr<ImageFolderSource>> ImageFolderSource::Open(std::shared_ptr<ObjectStore> store,
                                                                   std::string prefix) {
  std::unique_ptr<ImageFolderSource> source(new ImageFolderSource(store));
  ListOptions list;
  list.prefix = FolderPrefix(prefix);
  std::vector<std::pair<std::string, std::string>> found;  // key, class name
  SPOOL_RETURN_IF_ERROR(ForEachPage(*store, list, [&](const ListPage& page) {
    for (const ObjectInfo& info : page.objects) {
      std::string relative = info.key.substr(list.prefix.size());
      size_t slash = relative.find('/');
      if (slash == std::string::npos || ImageFormatOf(relative).empty()) {
        ++source->ignored_;
        continue;
      }
      found.emplace_back(info.key, relative.substr(0, slash));
    }
    return OkStatus();
  }));
  if (found.empty()) {
    return NotFoundError(store->Describe(list.prefix) +
                         " holds no images in class folders (expected <folder>/<class>/<image>.jpg|png|...)");
  }
  std::sort(found.begin(), found.end());
  for (const auto& [key, name] : found) {
    if (source->classes_.empty() || source->classes_.back() != name) source->classes_.push_back(name);
  }
  for (const auto& [key, name] : found) {
    int64_t label = std::lower_bound(source->classes_.begin(), source->classes_.end(), name) - source->classes_.begin();
    source->images_.push_back(Image{key, ImageFormatOf(key), label});
  }
  return source;
}

Result<SourceItem> ImageFolderSource::Next(tensorflow::Example* example, std::string* /*problem*/) {
  if (next_ >= images_.size()) return SourceItem::kEnd;
  const Image& image = images_[next_++];
  if (example == nullptr) return SourceItem::kExample;
  SPOOL_ASSIGN_OR_RETURN(std::string bytes, Read(next_ - 1));
  example->Clear();
  records::SetBytes(*example, "image/encoded", {bytes});
  records::SetBytes(*example, "image/format", {image.format});
  records::SetInt64s(*example, "image/class/label", {image.label});
  records::SetBytes(*example, "image/class/text", {classes_[image.label]});
  records::SetBytes(*example, "image/filename", {BaseName(image.key)});
  return SourceItem::kExample;
}

void ImageFolderSource::ReadAhead(std::function<bool(uint64_t position)> wanted) { wanted_ = std::move(wanted); }

void ImageFolderSource::FillReadAhead() {
  while (wanted_ && ahead_.size() < kReadAhead && scanned_ < images_.size()) {
    size_t index = scanned_++;
    if (!wanted_(index)) continue;
    ahead_.emplace_back(index, std::async(std::launch::async, [store = store_, key = images_[index].key] {
                          return ReadAll(*store, key);
                        }));
  }
}

Result<std::string> ImageFolderSource::Read(size_t index) {
  if (scanned_ < index) scanned_ = index;  // never read ahead what was passed
  while (!ahead_.empty() && ahead_.front().first < index) ahead_.pop_front();
  FillReadAhead();
  if (!ahead_.empty() && ahead_.front().first == index) {
    Result<std::string> bytes = ahead_.front().second.get();
    ahead_.pop_front();
    FillReadAhead();
    return bytes;
  }
  return ReadAll(*store_, images_[index].key);
}

std::vector<std::pair<std::string, std::string>> ImageFolderSource::Schema() const {
  return {{"image/class/label", "int64_list"},
          {"image/class/text", "bytes_list"},
          {"image/encoded", "bytes_list"},
          {"image/filename", "bytes_list"},
          {"image/format", "bytes_list"}};
}

}  // namespace spool::cli
