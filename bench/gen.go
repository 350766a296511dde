package bench

//go:generate env TAG=!dlmdb_standin sh gen_ours.sh
