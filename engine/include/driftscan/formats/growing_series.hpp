#pragma once
// A series that is still being written (live acquisition): a multi-page TIFF
// being appended to, or a folder (or glob) where frame files appear. poll()
// takes in the frames that have become complete since the last poll; a frame
// is never read before that:
//  - a page of a growing TIFF counts once its IFD (entries and out-of-line
//    values) and all its strip or tile data lie within the file's current
//    size. The IFD chain is followed from the last complete page, so a poll
//    costs a stat and a few small reads whatever the series' length (libtiff
//    would re-walk the chain from the start on every reopen).
//  - a file of a folder / glob counts when it is a complete TIFF by the same
//    test and was closed after writing or renamed into place (inotify), or
//    has not changed for `settle_s`. Files are taken in natural order (the
//    order of a batch run over the folder); one that is incomplete holds the
//    ones after it until it completes or `incomplete_timeout_s` passes.
// A frame that cannot join the series — another size or pixel type than
// frame 0, undecodable data, a file that never completes, a file named
// before one already taken — is skipped with a warning naming it. Frames are
// decoded when taken in (so a corrupt one is found then) and kept in a small
// cache bounded in bytes; the series never holds more.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "driftscan/core/frame_source.hpp"

namespace driftscan {

struct GrowingSeriesOptions {
  double settle_s = 0.2;                             // a folder's file: unchanged this long counts as complete
  double incomplete_timeout_s = 10.0;                // a folder's file still incomplete after this long is skipped
  std::size_t max_frames = 0;                        // take in at most this many frames (0: no bound)
  std::size_t cache_frames = 6;                      // decoded frames kept (the newest, frame 0 if still recent)...
  std::size_t cache_bytes = std::size_t(256) << 20;  // ...and at most this many bytes of them
};

// What one poll found.
struct SeriesGrowth {
  std::size_t added = 0;              // frames taken in
  std::vector<std::string> warnings;  // frames skipped, each naming its file (and page)
};

class GrowingSeries : public FrameSource {
 public:
  // `path`: a TIFF file, a folder or a glob. Throws bad_input naming it when
  // the folder does not exist or the path is neither (a .tif/.tiff file not
  // created yet, or with no complete page yet, is fine: it is waited for).
  static std::unique_ptr<GrowingSeries> open(const std::string& path, const GrowingSeriesOptions& options = {});
  ~GrowingSeries() override;
  GrowingSeries(const GrowingSeries&) = delete;
  GrowingSeries& operator=(const GrowingSeries&) = delete;

  // Takes in the frames completed since the last poll (one thread polls;
  // others may read frames meanwhile). Throws Error(failure) naming the path when the followed file
  // was deleted, replaced or truncated, or the folder removed; bad_input when
  // frame 0 itself cannot be decoded.
  SeriesGrowth poll();

  // Frames taken in so far; width/height 0 until frame 0 is in.
  std::size_t frame_count() const override;
  int width() const override;
  int height() const override;
  // Thread-safe, also while another thread polls.
  Frame frame(std::size_t k) const override;
  double pixel_size() const override;
  std::string pixel_unit() const override;
  std::string describe() const override;

  // "PATH: page 12" or the file of frame k.
  std::string frame_origin(std::size_t k) const;
  // What the series waits for now ("PATH: page 12 (its data end beyond the
  // file's end)"), empty when nothing incomplete is in sight.
  std::string pending() const;
  bool multi_file() const;
  // Polls that ended waiting on a page or file begun but not yet complete (or settled).
  std::size_t incomplete_waits() const;

  struct Impl;

 private:
  explicit GrowingSeries(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace driftscan
