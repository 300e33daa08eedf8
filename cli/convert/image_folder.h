// Image-folder input of `spool convert`, in the ImageNet / CIFAR layout: one
// subfolder per class under the source URL, images inside (any depth). Each
// image becomes an Example with the features the TensorFlow models
// repository uses: image/encoded (the file's bytes), image/format ("JPEG",
// "PNG", ...), image/class/label (the class's index among the sorted class
// names, from 0), image/class/text (the class name) and image/filename.
// Images come in key order (class by class). Files that are not images by
// their extension, and files directly under the source, are not converted.
#pragma once

#include <deque>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "cli/convert/example_source.h"
#include "spool/core/storage/object_store.h"

namespace spool::cli {

class ImageFolderSource : public ExampleSource {
 public:
  // Lists the folder `prefix` of `store` (NotFound when it holds no image).
  static Result<std::unique_ptr<ImageFolderSource>> Open(std::shared_ptr<ObjectStore> store, std::string prefix);

  // A null `example` skips the image without reading it.
  Result<SourceItem> Next(tensorflow::Example* example, std::string* problem) override;
  std::vector<std::pair<std::string, std::string>> Schema() const override;
  // Keeps up to kReadAhead wanted images being read in parallel.
  void ReadAhead(std::function<bool(uint64_t position)> wanted) override;

  size_t images() const { return images_.size(); }
  size_t classes() const { return classes_.size(); }
  size_t ignored() const { return ignored_; }

 private:
  struct Image {
    std::string key;
    std::string format;
    int64_t label = 0;
  };
  explicit ImageFolderSource(std::shared_ptr<ObjectStore> store) : store_(std::move(store)) {}
  void FillReadAhead();
  Result<std::string> Read(size_t index);

  static constexpr size_t kReadAhead = 16;

  std::shared_ptr<ObjectStore> store_;
  std::vector<std::string> classes_;  // sorted
  std::vector<Image> images_;         // in key order
  size_t next_ = 0;
  size_t ignored_ = 0;
  std::function<bool(uint64_t)> wanted_;  // unset: no read-ahead
  size_t scanned_ = 0;                    // images considered for read-ahead
  std::deque<std::pair<size_t, std::future<Result<std::string>>>> ahead_;  // in image order
};

// "JPEG" for "x.jpg", "PNG" for "y.PNG", ... ; "" for other extensions.
std::string ImageFormatOf(std::string_view key);

}  // namespace spool::cli
