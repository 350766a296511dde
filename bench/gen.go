package bench

//go:generate env TAG=dlmdb_wip sh gen_ours.sh
