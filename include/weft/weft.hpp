// Everything weft offers, in one include. Parts can be included on their own to keep builds fast.
#pragma once

#include <weft/core/binding.hpp>
#include <weft/core/kinds.hpp>
#include <weft/core/op.hpp>
#include <weft/io/format.hpp>
#include <weft/io/pytorch_csv.hpp>
#include <weft/schedule/dependencies.hpp>
#include <weft/schedule/diagnose.hpp>
#include <weft/schedule/dsl.hpp>
#include <weft/schedule/memory.hpp>
#include <weft/schedule/model.hpp>
#include <weft/schedule/schedule.hpp>
#include <weft/schedule/verify.hpp>
#include <weft/schedules/dualpipe.hpp>
#include <weft/schedules/interleaved.hpp>
#include <weft/schedules/one_f_one_b.hpp>
#include <weft/schedules/transfers.hpp>
#include <weft/schedules/zero_bubble_v.hpp>
