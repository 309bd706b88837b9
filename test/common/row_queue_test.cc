#include "common/row_queue.h"

#include "catch2/catch.hpp"

namespace rog {
namespace {

TEST_CASE("RowQueue keeps each row once, in the order it was queued", "[row_queue]") {
  RowQueue q(4);
  CHECK(q.empty());
  CHECK(q.Push(2));
  CHECK(q.Push(0));
  CHECK_FALSE(q.Push(2));  // queued already: stays where it was
  CHECK(q.contains(2));
  CHECK_FALSE(q.contains(1));
  CHECK(q.front() == 2);
  q.PopFront();
  CHECK_FALSE(q.contains(2));
  CHECK(q.Push(2));  // off the queue: may come again, at the back
  CHECK(q.front() == 0);
  q.PopFront();
  CHECK(q.front() == 2);
  q.PopFront();
  CHECK(q.empty());
}

TEST_CASE("RowQueue::Clear empties the queue and forgets every row", "[row_queue]") {
  RowQueue q(3);
  q.Push(1);
  q.Push(0);
  q.Clear();
  CHECK(q.empty());
  for (RowId row = 0; row < 3; ++row) CHECK_FALSE(q.contains(row));
  CHECK(q.Push(1));
  CHECK(q.front() == 1);
}

}  // namespace
}  // namespace rog
