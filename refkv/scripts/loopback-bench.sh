#!/bin/bash
# Build first: cargo build --release -p refkv --bins --examples
# 3-node refkv on loopback, sustained writes, one route and three routes (three groups).
B="$(cd "$(dirname "$0")/../.." && pwd)/target/release"
for mode in one three; do
  D=$(mktemp -d); P=""
  extra=""; [ $mode = three ] && extra="--initial-splits load-0005,load-0011"
  for i in 1 2 3; do
    $B/refkv serve --id $i --listen 127.0.0.1:1710$i --peers 1=127.0.0.1:17101,2=127.0.0.1:17102,3=127.0.0.1:17103 --data-dir $D/n$i $extra > $D/n$i.log 2>&1 &
    P="$P $!"
  done
  sleep 6
  for c in 16 32; do
    echo "== $mode route(s), concurrency $c"
    $B/examples/loadgen --addrs 127.0.0.1:17101,127.0.0.1:17102,127.0.0.1:17103 --concurrency $c --seconds 15 2>&1 | tail -4
  done
  kill $P; wait $P 2>/dev/null; rm -rf $D
done
