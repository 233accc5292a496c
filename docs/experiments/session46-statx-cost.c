/* fstatat against statx (with and without STATX_BTIME) of 20,000 cached
 * names, 1,000,000 calls each, three rounds: what the passthrough
 * backend's switch to statx costs the host side (docs/PERFORMANCE.md,
 * "What the birth identity costs"). Needs /var/tmp/pt20k/files (made by
 * `pthot count /var/tmp/pt20k 20000 0`). gcc -O2 session46-statx-cost.c */
#define _GNU_SOURCE
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){int d=open("/var/tmp/pt20k/files",O_PATH|O_DIRECTORY);char n[32];struct stat st;struct statx sx;
for(int r=0;r<3;r++){
double t=now();for(int i=0;i<1000000;i++){snprintf(n,32,"f%07d",i%20000);fstatat(d,n,&st,AT_SYMLINK_NOFOLLOW);}double a=now()-t;
t=now();for(int i=0;i<1000000;i++){snprintf(n,32,"f%07d",i%20000);statx(d,n,AT_SYMLINK_NOFOLLOW,STATX_BASIC_STATS|STATX_BTIME,&sx);}double b=now()-t;
t=now();for(int i=0;i<1000000;i++){snprintf(n,32,"f%07d",i%20000);statx(d,n,AT_SYMLINK_NOFOLLOW,STATX_BASIC_STATS,&sx);}double c=now()-t;
printf("fstatat %.0f ns, statx+btime %.0f ns, statx basic %.0f ns\n",a*1e3,b*1e3,c*1e3);}}
